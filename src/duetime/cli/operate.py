"""The ``duetime`` commands for people running it: ``stats`` (counts and the last hour) and
``workers`` (the live ones). Each works on an app or a store URL, like the other commands
(:mod:`duetime.cli.target`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from duetime.admin.discover import StoreView, split_names
from duetime.cli.output import echo, emit, times, when
from duetime.cli.target import Target, app_command, warn_invalid
from duetime.features.telemetry import TypeHistory, WorkerInfo
from duetime.features.telemetry.columns import KINDS
from duetime.stores.base import State


def stats_options(command: Callable[..., None]) -> Callable[..., None]:
    return click.option(
        "--minutes",
        type=click.IntRange(1, 60),
        default=60,
        show_default=True,
        help="How far back the counts go (the store keeps an hour).",
    )(command)


@app_command()
@stats_options
def stats(minutes: int, **options: Any) -> None:
    """How many tasks of each type are due, running and dead now, and what the workers
    counted over the last --minutes: fired, succeeded, failed, retried, dead-lettered,
    missed cron ticks, and the p99 of lateness (the bound of its histogram bucket); last,
    whether the type is paused (``duetime pause``)."""
    target = Target.from_options(options)

    async def collect() -> tuple[list[tuple[str, dict[State, int], TypeHistory | None]], set[str]]:
        history = await target.app.recent(minutes)
        stored = await target.all_types()
        paused = await target.app.paused()
        recent = split_names((set(history) - _internal(history)) | paused)
        warn_invalid(sorted({*stored.invalid, *recent.invalid}))
        # A type of the history the app does not know (renamed, or another app's on the
        # same store) is read from the store, without being declared on the app.
        view = StoreView(target.app)
        rows = []
        for name in sorted({*stored.names, *recent.names}):
            client = await view.client(name)
            rows.append((name, await client.counts(name), history.get(name)))
        return rows, paused

    rows, paused = target.run(collect)
    if target.as_json:
        emit(
            [
                {"type": name, **counts, "paused": name in paused, "recent": _recent(h, minutes)}
                for name, counts, h in rows
            ]
        )
        return
    click.echo("\t".join(["type", "due", "running", "dead", *KINDS, "p99_ms", "paused"]))
    for name, counts, h in rows:
        recent = _recent(h, minutes)
        cells = [name, *(str(counts[s]) for s in ("due", "running", "dead"))]
        cells += [str(recent[k]) for k in KINDS]
        cells += [_p99(recent["lateness_p99_ms"]), "paused" if name in paused else "-"]
        echo("\t".join(cells))


def _internal(history: dict[str, Any]) -> set[str]:
    return {name for name in history if name.startswith("duetime.")}


def _recent(history: TypeHistory | None, minutes: int) -> dict[str, Any]:
    if history is None:
        return {"minutes": minutes, **dict.fromkeys(KINDS, 0), "lateness_p99_ms": None}
    p99 = history.lateness_quantile(0.99)
    return {
        "minutes": minutes,
        **{k: history.total(k) for k in KINDS},
        "lateness_p99_ms": "inf" if p99 == float("inf") else p99,
    }


def _p99(value: float | str | None) -> str:
    if value is None:
        return "-"
    return ">60000" if value == "inf" else f"<={value:g}"


@app_command()
def workers(**options: Any) -> None:
    """The workers alive now, on any machine: id, host, pid, started, version, types, what
    runs now and the last claim (from the heartbeat each keeps in the store)."""
    target = Target.from_options(options)
    found = target.run(target.app.workers)
    if target.as_json:
        emit([_worker_doc(w) for w in found])
        return
    click.echo("id\thost\tpid\tstarted\tversion\ttypes\trunning\tlast claim")
    for w in found:
        running = ",".join(f"{t}:{n}" for t, n in w.running.items() if n) or "idle"
        cells = [w.id, w.host, str(w.pid), when(w.started), w.version, ",".join(w.types)]
        echo("\t".join([*cells, running, when(w.last_claim)]))


def _worker_doc(w: WorkerInfo) -> dict[str, Any]:
    return {
        "id": w.id,
        "host": w.host,
        "pid": w.pid,
        **times("started", w.started),
        "version": w.version,
        "namespace": w.namespace,
        "types": list(w.types),
        "running": dict(w.running),
        **times("last_claim", w.last_claim),
        **times("seen", w.seen),
    }
