"""Each call of a Redis script checked against the KEYS and ARGV its header declares: the
contract suite runs every store's calls through this on the Redis topologies, so a call
site that passes one key or argument too few or too many fails where it is made, not as
a wrong write in the script."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from duetime.stores.redis import cluster, scripts

Run = Callable[[Any, str, list[str], list[Any]], Awaitable[Any]]


def problem(name: str, keys: list[str], args: list[Any]) -> str | None:
    """What is wrong with a call of script ``name`` by its header, or None."""
    declared = scripts.arity(scripts.own_text(name))
    for what, given, (least, most) in (
        ("keys", len(keys), declared.keys),
        ("arguments", len(args), declared.argv),
    ):
        if given < least or (most is not None and given > most):
            top = "any number" if most is None else most
            return f"{name}: {given} {what}, its header declares {least} to {top}"
    return None


def _checked(run: Run) -> Run:
    async def checked(self: Any, name: str, keys: list[str], args: list[Any]) -> Any:
        wrong = problem(name, keys, args)
        assert wrong is None, wrong
        return await run(self, name, keys, args)

    return checked


def check_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Check every script call of this test, on one server, Sentinel and a Cluster."""
    for runner in (scripts.ScriptRunner, cluster.ClusterScriptRunner):
        monkeypatch.setattr(runner, "run", _checked(runner.run))
