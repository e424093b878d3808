"""``duetime dashboard``: serve the web dashboard of an app or a store URL."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from duetime.cli.output import BadUsage, echo
from duetime.cli.target import Target, app_command
from duetime.errors import ConfigError, ValidationError


def dashboard_options(command: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(
        (
            click.option("--host", default="127.0.0.1", show_default=True, help="Listen here."),
            click.option("--port", type=click.IntRange(1, 65535), default=8787, show_default=True),
            click.option(
                "--token",
                envvar="DUETIME_DASHBOARD_TOKEN",
                help="What changes need (default: a new one, printed). Required beyond "
                "127.0.0.1, where reading needs it too.",
            ),
            click.option(
                "--token-file",
                type=click.Path(dir_okay=False, path_type=Path),
                envvar="DUETIME_DASHBOARD_TOKEN_FILE",
                help="Read the token from this file, the same across restarts; a new one is "
                "written there (readable by you only) when the file does not exist.",
            ),
            click.option("--read-only", is_flag=True, help="Refuse every change."),
            click.option(
                "--allowed-host",
                "allowed_hosts",
                multiple=True,
                metavar="NAME",
                help="A host name to answer besides loopback ones (repeatable): a name, an "
                "IP address, or *.example.com for every name under it; requests naming "
                "any other host are refused.",
            ),
        )
    ):
        command = option(command)
    return command


@app_command(prints_json=False)
@dashboard_options
def dashboard(
    host: str,
    port: int,
    token: str | None,
    token_file: Path | None,
    read_only: bool,
    allowed_hosts: tuple[str, ...],
    **options: Any,
) -> None:
    """Serve the web dashboard (needs duetime[web]): what is due, running and dead, the last
    hour, live workers, cron schedules, pollers and expiring groups; retry, delete and
    pause with the token."""
    if token is not None and token_file is not None:
        raise click.UsageError(
            "give --token (or DUETIME_DASHBOARD_TOKEN) or --token-file, not both"
        )
    target = Target.from_options(options)
    try:
        from duetime.web.serve import CannotListen, serve
    except ImportError:
        raise click.ClickException("the dashboard needs: pip install 'duetime[web]'") from None
    if token_file is not None:
        token = token_from_file(token_file)
    try:
        serve(
            target.app,
            host=host,
            port=port,
            token=token,
            read_only=read_only,
            allowed_hosts=allowed_hosts,
            say=echo,
        )
    except (ConfigError, ValidationError) as exc:
        raise BadUsage(str(exc)) from None
    except CannotListen as exc:
        raise click.ClickException(str(exc)) from None


def token_from_file(path: Path) -> str:
    """The token kept in ``path``; when there is no such file, a new token, written there
    readable by its owner only (mode 0600).

    Raises:
        click.BadParameter: the file cannot be read or written, or holds no token.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_token(path)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot create {str(path)!r}: {exc.strerror}", param_hint="--token-file"
        ) from None
    from duetime.web import new_token  # the extra is there: the caller imported it

    token = new_token()
    with os.fdopen(fd, "w") as file:
        file.write(token + "\n")
    click.echo(f"a new dashboard token is in {path}", err=True)
    return token


def _read_token(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise click.BadParameter(
            f"cannot read {str(path)!r}: {why}", param_hint="--token-file"
        ) from None
    if not token or any(c.isspace() for c in token):
        raise click.BadParameter(
            f"{str(path)!r} holds no token (one line, no spaces): delete it to have a new "
            "one written",
            param_hint="--token-file",
        )
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        click.echo(f"warning: {path} can be read by other users: chmod 600 {path}", err=True)
    return token
