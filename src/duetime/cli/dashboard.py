"""``duetime dashboard``: serve the web dashboard of an app or a store URL."""

from __future__ import annotations

from collections.abc import Callable
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


@app_command()
@dashboard_options
def dashboard(
    host: str,
    port: int,
    token: str | None,
    read_only: bool,
    allowed_hosts: tuple[str, ...],
    **options: Any,
) -> None:
    """Serve the web dashboard (needs duetime[web]): what is due, running and dead, the last
    hour, live workers, cron schedules, pollers and expiring groups; retry, delete and
    pause with the token."""
    target = Target.from_options(options)
    try:
        from duetime.web.serve import serve
    except ImportError:
        raise click.ClickException("the dashboard needs: pip install 'duetime[web]'") from None
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
