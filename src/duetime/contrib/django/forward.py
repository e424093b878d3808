"""The arguments ``manage.py duetime ...`` hands to the ``duetime`` command: the project's
App (or store) filled in where the command line names none, and Django's own options
(already applied by manage.py) taken out."""

from __future__ import annotations

from collections.abc import Sequence

import click

#: manage.py's options, applied before any command runs; duetime's command does not know them.
DJANGO_OPTIONS = ("--settings", "--pythonpath")


def without_django_options(args: Sequence[str]) -> list[str]:
    """``args`` without ``--settings X``, ``--settings=X``, ``--pythonpath X``, ..."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in DJANGO_OPTIONS:
            skip = True
        elif not arg.startswith(tuple(f"{name}=" for name in DJANGO_OPTIONS)):
            out.append(arg)
    return out


def forward(
    group: click.Group, args: Sequence[str], app: str | None, url: str | None, namespace: str
) -> list[str]:
    """``args`` for ``group`` with the project's target added after the subcommand when
    the command line gives none: ``app`` (``DUETIME_APP``, as the first argument, which
    every command working on an app takes) or else ``--url url --namespace namespace`` for
    a command that takes ``--url``. Without a subcommand, ``args`` as they are."""
    args = without_django_options(args)
    found = _subcommand(group, args)
    if found is None:
        return args
    at, command = found
    rest = args[at + 1 :]
    if _names_target(command, rest):
        return args
    params = {p.name for p in command.params}
    if app is not None and "app_path" in params:
        added = [app]
    elif url is not None and "url" in params:
        added = ["--url", url, "--namespace", namespace]
    else:
        return args
    return [*args[: at + 1], *added, *rest]


def _subcommand(group: click.Group, args: list[str]) -> tuple[int, click.Command] | None:
    """Where the subcommand is in ``args``, and which it is (None: none or unknown)."""
    takes_value = _value_options(group)
    skip = False
    for n, arg in enumerate(args):
        if skip:
            skip = False
        elif arg in takes_value:
            skip = True
        elif arg == "--":
            return None
        elif not arg.startswith("-"):
            with click.Context(group) as ctx:
                command = group.get_command(ctx, arg)
            return None if command is None else (n, command)
    return None


def _names_target(command: click.Command, args: list[str]) -> bool:
    """Whether ``args`` already name an app (``MODULE:APP`` first, or ``--app``) or a store
    (``--url``)."""
    takes_value = _value_options(command)
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("--app", "--url") or arg.startswith(("--app=", "--url=")):
            return True
        elif arg in takes_value:
            skip = True
        elif arg == "--":
            return False
        elif not arg.startswith("-"):
            return ":" in arg  # the first positional: a task type never holds a colon
    return False


def _value_options(command: click.Command) -> set[str]:
    return {
        name
        for p in command.params
        if isinstance(p, click.Option) and not p.is_flag and not p.count
        for name in p.opts
    }
