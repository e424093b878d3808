"""Which App a ``duetime`` command works on: the one a module names (``MODULE:APP``, first
argument or ``--app``), or a bare one on a store URL (``--url`` or ``DUETIME_URL``), which
knows the task types from the store; and the running of a command's calls, with its
errors turned into exit codes."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import shlex
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import click
from click.core import ParameterSource

from duetime.admin import discover
from duetime.app import App
from duetime.cli.output import BadUsage, NotFoundExit
from duetime.errors import DuetimeError, NotFound, ValidationError
from duetime.stores import open_store
from duetime.validate import check_name

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def warn_invalid(names: list[str]) -> None:
    """Say on stderr which names read from the store were skipped as invalid type names."""
    for name in names:
        click.echo("warning: " + discover.INVALID_WARNING % name, err=True)


def load_app(target: str) -> App:
    """The App named by ``module:attribute``, imported from the working directory.

    This is the one place duetime imports code by name, and the name comes from the
    command line, never from stored data.

    Raises:
        click.BadParameter: each way ``target`` can be wrong, saying which (exit code 2): not
            ``module:attribute``, a file path instead of a module name, a module that is
            not found, an attribute the module lacks, one that is not an App.
    """
    module_name, _, attribute = target.rpartition(":")
    if not module_name or not attribute:
        _bad(f"{target!r}: expected module:attribute, e.g. myproject.tasks:app")
    if _is_path(module_name):
        _bad(_path_given(module_name, attribute))
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not _is_within(module_name, exc.name):
            _bad(f"cannot import {module_name!r}: importing it failed: {exc}")
        _bad(
            f"cannot import {module_name!r}: no module {exc.name!r} in {os.getcwd()} or on "
            f"PYTHONPATH; {RUN_FROM_HINT}"
        )
    except ImportError as exc:
        _bad(f"cannot import {module_name!r}: importing it failed: {exc}")
    if not hasattr(module, attribute):
        apps = sorted(name for name, value in vars(module).items() if isinstance(value, App))
        found = f"; its duetime.App: {', '.join(apps)}" if apps else ""
        _bad(f"module {module_name!r} has no attribute {attribute!r}{found}")
    app = getattr(module, attribute)
    if not isinstance(app, App):
        kind = type(app).__name__
        _bad(f"{target!r} is {'an' if kind[0] in 'aeiouAEIOU' else 'a'} {kind}, not a duetime.App")
    return app


#: How to make a module importable, for errors about MODULE:APP.
RUN_FROM_HINT = "run duetime from the directory that holds it, or set PYTHONPATH to that directory"


def _bad(message: str) -> NoReturn:
    raise click.BadParameter(message, param_hint="'MODULE:APP'")


def _is_path(module_name: str) -> bool:
    """Whether a file path was given where a module name goes (``tasks.py``, ``../x``)."""
    return (
        "/" in module_name
        or "\\" in module_name
        or module_name.startswith(".")
        or module_name.endswith(".py")
    )


def _path_given(path: str, attribute: str) -> str:
    """The error for a path given as MODULE, with the module name to give instead."""
    file = path.replace("\\", "/").rstrip("/")
    folder, _, name = file.rpartition("/")
    name = name.removesuffix(".py")
    if not name.isidentifier():
        return f"{path!r} is a file path: give a module name (tasks:app); {RUN_FROM_HINT}"
    where = (
        f"run duetime from {folder or '/'} or set PYTHONPATH={folder or '/'}"
        if folder not in ("", ".")
        else "run duetime from the directory that holds it, or set PYTHONPATH to it"
    )
    return f"{path!r} is a file path: give the module name, {name}:{attribute}, and {where}"


def _is_within(module_name: str, missing: str) -> bool:
    """Whether the module not found is the one asked for or a package holding it (rather
    than a module it imports)."""
    return module_name == missing or module_name.startswith(missing + ".")


class AppCommand(click.Command):
    """A command that takes ``MODULE:APP`` as its first argument (the form from before
    ``--url``) as well as ``--app``: a first argument holding a colon is the app, since a
    task type or cron name never holds one."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, lift_app(self, args))

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return ["[MODULE:APP]", *super().collect_usage_pieces(ctx)]


def lift_app(command: click.Command, args: list[str]) -> list[str]:
    """``args`` with a first positional argument holding a colon moved to ``--app``."""
    takes_value = {
        name
        for p in command.params
        if isinstance(p, click.Option) and not p.is_flag and not p.count
        for name in p.opts
    }
    skip = False
    for n, arg in enumerate(args):
        if skip:
            skip = False
        elif arg == "--":
            return args
        elif arg in takes_value:
            skip = True
        elif not arg.startswith("-") or arg == "-":
            if ":" in arg:
                return [*args[:n], *args[n + 1 :], "--app", arg]
            return args
    return args


def app_command(
    name: str | None = None, *, prints_json: bool = True
) -> Callable[[Callable[..., None]], click.Command]:
    """A command on an app or a store URL (``--app``, ``--url``, ``--namespace``), with
    ``--json`` unless it prints no result (``prints_json=False``: the dashboard);
    ``duetime.cli.group`` adds it to the ``duetime`` command."""

    def make(fn: Callable[..., None]) -> click.Command:
        return click.command(name=name, cls=AppCommand)(target_options(fn, prints_json))

    return make


def target_options(command: F, prints_json: bool = True) -> F:
    """``--app``, ``--url``, ``--namespace`` and ``--json``: where a command works, and how
    it prints."""
    options = [
        click.option(
            "--app",
            "app_path",
            envvar="DUETIME_APP",
            metavar="MODULE:APP",
            help="The app, imported from the working directory (or the first argument).",
        ),
        click.option(
            "--url",
            envvar="DUETIME_URL",
            help="The store, when no app is given: redis://..., sqlite:///path, ...",
        ),
        click.option(
            "--namespace",
            envvar="DUETIME_NAMESPACE",
            help="The namespace in the store (with --url)  [default: default]",
        ),
    ]
    if prints_json:
        options.append(
            click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
        )
    for option in reversed(options):
        command = option(command)
    return command


@dataclass(slots=True)
class Target:
    """The app a command works on. ``bare``: made from a URL, without the handlers' code."""

    app: App
    bare: bool
    as_json: bool
    #: The arguments that named the app or store on the command line (MODULE:APP, --url,
    #: --namespace), shell-quoted: what a command suggested in a message must carry to work
    #: when pasted.
    given: tuple[str, ...] = ()

    @classmethod
    def resolve(
        cls,
        app_path: str | None,
        url: str | None,
        namespace: str | None,
        as_json: bool,
        creates: bool = False,
    ) -> Target:
        """The app of the command's options; unless the command ``creates`` (it schedules
        or writes settings), the app opens only a store that exists (a read of a SQLite file
        that does not exist fails naming the path, rather than making an empty one).

        Raises:
            click.UsageError: both or neither of an app and a URL; click.BadParameter: a bad
                app, URL or namespace (exit code 2).
        """
        ctx = click.get_current_context()
        given = [
            f"--{name}"
            for name in ("url", "namespace")
            if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
        ]
        named = _named_on_command_line(ctx, app_path, url, namespace)
        if app_path:
            if given:
                raise click.UsageError(f"give MODULE:APP or {' and '.join(given)}, not both")
            return cls(_opening(load_app(app_path), creates), False, as_json, named)
        if not url:
            raise click.UsageError("no store: give MODULE:APP, or --url URL (or set DUETIME_URL)")
        ns = namespace or "default"
        try:
            check_name("namespace", ns)
        except DuetimeError as exc:
            raise click.BadParameter(str(exc), param_hint=_origin(ctx, "namespace")) from None
        try:
            app = App(url, namespace=ns)
            open_store(app.url, namespace=ns)  # the URL checked, not connected
        except DuetimeError as exc:
            raise click.BadParameter(str(exc), param_hint=_origin(ctx, "url")) from None
        return cls(_opening(app, creates), True, as_json, named)

    @classmethod
    def from_options(cls, options: dict[str, Any], *, creates: bool = False) -> Target:
        """The app of a command's target options, taken out of its ``options`` (see
        :meth:`resolve` for ``creates``)."""
        return cls.resolve(
            options.pop("app_path"),
            options.pop("url"),
            options.pop("namespace"),
            options.pop("as_json", False),  # a command that prints no result has no --json
            creates,
        )

    async def adopt(self, *names: str) -> None:
        """A bare app learns the types ``names`` from the store; an app from a module knows
        its own (and refuses others: a typo)."""
        if self.bare:
            await discover.adopt(self.app, *names)

    async def all_types(self) -> discover.Found:
        """The types of ``ls`` without a type, and of ``stats``: an app's own, or for a bare
        app, those the store holds (adopted), with apart the names in the store that are
        not valid type names (for :func:`warn_invalid`)."""
        if not self.bare:
            return discover.Found(sorted(self.app.types), [])
        found = await discover.find_types(self.app)
        await discover.adopt(self.app, *found.names)
        return found

    def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call`` in a new event loop, closing the app after it; duetime's errors become
        exit codes: NotFound 3, ValidationError 2, any other 1."""

        async def main() -> T:
            try:
                return await call()
            finally:
                await self.app.close()

        try:
            with quiet_store_logs():
                return asyncio.run(main())
        except NotFound as exc:
            raise NotFoundExit(str(exc)) from None
        except ValidationError as exc:
            raise refused(exc) from None
        except DuetimeError as exc:
            raise click.ClickException(str(exc)) from None


def _origin(ctx: click.Context, name: str) -> str:
    """How the option ``name`` was given, for an error about its value: ``--url``, or
    ``DUETIME_URL`` when it came from the environment."""
    if ctx.get_parameter_source(name) is ParameterSource.ENVIRONMENT:
        return f"DUETIME_{name.upper()}"
    return f"--{name}"


def _named_on_command_line(
    ctx: click.Context, app_path: str | None, url: str | None, namespace: str | None
) -> tuple[str, ...]:
    """MODULE:APP, ``--url URL`` and ``--namespace NS`` as given on the command line (what
    came from the environment is left out: it is still there when a suggestion is pasted),
    quoted for a shell."""
    named: list[str] = []
    for name, value, flag in (
        ("app_path", app_path, ""),
        ("url", url, "--url"),
        ("namespace", namespace, "--namespace"),
    ):
        if value and ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE:
            named += [flag, shlex.quote(value)] if flag else [shlex.quote(value)]
    return tuple(named)


def _opening(app: App, creates: bool) -> App:
    if not creates:
        app.open_existing()
    return app


def refused(exc: ValidationError) -> click.ClickException:
    """The App's refusal of a value as the command's error (exit code 2): naming the option
    or argument that carried the value (``--every``, ``TASK_ID``) when the field is one of
    the command's."""
    ctx = click.get_current_context(silent=True)
    for param in [] if ctx is None else ctx.command.params:
        if param.name == exc.field:
            return click.BadParameter(exc.problem, ctx=ctx, param=param)
    return BadUsage(str(exc))


@contextlib.contextmanager
def quiet_store_logs() -> Iterator[None]:
    """No INFO lines from the stores (``SQLite store open: ...``) while a one-shot command
    runs: they tell a long-running process (a worker, the dashboard) where it works, and
    are noise before a command's own output. Warnings still show; ``--log-level debug``
    shows everything."""
    stores = logging.getLogger("duetime.stores")
    if stores.isEnabledFor(logging.DEBUG):
        yield
        return
    before = stores.level
    stores.setLevel(logging.WARNING)
    try:
        yield
    finally:
        stores.setLevel(before)
