"""Where W7's slot-to-start latency goes: a timeline of one worker's store calls, wake-ups
and scheduler calls (recorded by bench/pollers_worker.py with ``--trace``), cut into the
steps between an instruction's end and the next one's start.

Recording wraps the store object's methods, and its wake-up callback, on the instance: it
costs a few microseconds a step, and changes nothing in duetime. Every mark is
``perf_counter()`` seconds in the worker process, the clock of the handler's own marks.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

#: The store calls recorded: each as a mark when it starts and one when it returns.
TRACED_CALLS = ("claim", "settle", "hasten", "active_ids", "schedule")

#: The path from one instruction's end to the next one's start at concurrency 1, as
#: (step name, the mark that ends the step); a mark is (what, task type: "w" for the
#: instructions' type, "p" for the poller's own, None for either).
PATH: tuple[tuple[str, tuple[str, str | None]], ...] = (
    ("outcome waits for the flusher", ("settle>", "w")),
    ("settle round trip", ("settle<", "w")),
    ("settled -> hasten sent", ("hasten>", "p")),
    ("hasten round trip(s)", ("hasten<", "p")),
    ("wake-up reaches the worker", ("wake", "p")),
    ("wake-up -> claim sent", ("claim>", "p")),
    ("claim round trip (poller task)", ("claim<", "p")),
    ("claimed -> active ids sent", ("active_ids>", "w")),
    ("active ids round trip", ("active_ids<", "w")),
    ("-> scheduler called", ("scheduler", None)),
    ("scheduler -> instructions sent", ("schedule>", "w")),
    ("schedule round trip", ("schedule<", "w")),
    ("wake-up reaches the worker", ("wake", "w")),
    ("wake-up -> claim sent", ("claim>", "w")),
    ("claim round trip (instruction)", ("claim<", "w")),
    ("claimed -> handler starts", ("start", None)),
)

Mark = tuple[float, str, str, Any]  # (perf_counter, what, "w"/"p"/"", detail)


class Trace:
    """The marks of one worker process, in time order."""

    def __init__(self, instruction_type: str) -> None:
        self.instruction_type = instruction_type
        self.marks: list[Mark] = []

    def kind(self, task_type: str) -> str:
        if task_type == self.instruction_type:
            return "w"
        return "p" if task_type.endswith("." + self.instruction_type) else "?"

    def mark(self, what: str, task_type: str, detail: Any = None) -> None:
        self.marks.append((time.perf_counter(), what, self.kind(task_type), detail))

    def wrap_store(self, store: Any) -> None:
        """Record every traced call of ``store``, and its wake-ups, on the instance."""
        for name in TRACED_CALLS:
            setattr(store, name, self._timed(name, getattr(store, name)))
        listen = store.listen

        async def traced_listen(on_wake: Callable[[str, int], None]) -> None:
            def wake(task_type: str, due_ms: int) -> None:
                self.mark("wake", task_type)
                on_wake(task_type, due_ms)

            await listen(wake)

        store.listen = traced_listen

    def _timed(self, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(call)
        async def timed(task_type: str, *args: Any, **kwargs: Any) -> Any:
            self.mark(name + ">", task_type)
            result = await call(task_type, *args, **kwargs)
            self.mark(name + "<", task_type, result if name == "hasten" else None)
            return result

        return timed


def steps(marks: list[list[Any]], start: list[float], end: list[float], skip: int) -> list[Any]:
    """Per instruction i >= ``skip`` (concurrency 1): the durations of :data:`PATH`'s steps,
    in ms, from end[i] to start[i + 1], or None where a mark was not found in order."""
    scheduler = [m for m in marks if m[1] == "scheduler"]
    timeline = sorted(
        [m for m in marks if m[1] != "scheduler"]
        + scheduler
        + [[t, "start", "", None] for t in start]
    )
    out: list[Any] = []
    pos = 0
    for i in range(skip, len(start) - 1):
        t0, t1 = end[i], start[i + 1]
        while pos < len(timeline) and timeline[pos][0] < t0:
            pos += 1
        found: list[float] = []
        cursor, last = pos, t0
        for _, (what, kind) in PATH:
            while cursor < len(timeline) and not _matches(timeline[cursor], what, kind):
                cursor += 1
            if cursor == len(timeline) or timeline[cursor][0] > t1:
                found = []
                break
            found.append((timeline[cursor][0] - last) * 1000)
            last = timeline[cursor][0]
            cursor += 1
        out.append(found or None)
    return out


def _matches(mark: list[Any], what: str, kind: str | None) -> bool:
    return bool(mark[1] == what and (kind is None or mark[2] == kind))


def breakdown(
    marks: list[list[Any]], start: list[float], end: list[float], skip: int
) -> dict[str, Any]:
    """Median, p99 and mean of each step over the samples, and the mean of each over the
    slowest 1 % (where the tail comes from)."""
    rows = [r for r in steps(marks, start, end, skip) if r is not None]
    if not rows:
        return {"samples": 0}
    totals = [sum(r) for r in rows]
    cut = sorted(totals)[max(int(len(totals) * 0.99) - 1, 0)]
    tail = [r for r, total in zip(rows, totals, strict=True) if total >= cut]
    table = []
    for n, (name, _) in enumerate(PATH):
        col = sorted(r[n] for r in rows)
        table.append(
            {
                "step": name,
                "p50_ms": statistics.median(col),
                "p99_ms": col[max(int(len(col) * 0.99) - 1, 0)],
                "mean_ms": statistics.fmean(col),
                "tail_mean_ms": statistics.fmean(r[n] for r in tail),
            }
        )
    return {
        "samples": len(rows),
        "total_p50_ms": statistics.median(totals),
        "tail_from_ms": cut,
        "steps": table,
    }


def hasten_misses(marks: list[list[Any]]) -> dict[str, int]:
    """How the poller's hasten calls came back: moved, due by then, or not waiting (the
    poller's task was held: its call ran or its outcome was not settled yet)."""
    results = [m[3] for m in marks if m[1] == "hasten<"]
    return {
        "moved": sum(r is True for r in results),
        "due_already": sum(r is False for r in results),
        "not_waiting": sum(r is None for r in results),
    }


def hasten_retries(marks: list[list[Any]]) -> dict[str, float]:
    """For each hasten call that came back "not waiting": how long after it the poller's
    task was settled (hastening could have worked from then), and how long after it the
    next hasten call went out (when the retry did). Medians and p99s in ms."""
    settled = [m[0] for m in marks if m[1] == "settle<" and m[2] == "p"]
    sent = [m[0] for m in marks if m[1] == "hasten>"]
    ready, retried = [], []
    for m in marks:
        if m[1] != "hasten<" or m[3] is not None:
            continue
        t = m[0]
        s_next = next((x for x in settled if x >= t), None)
        r_next = next((x for x in sent if x > t), None)
        if s_next is not None and r_next is not None:
            ready.append((s_next - t) * 1000)
            retried.append((r_next - t) * 1000)
    if not ready:
        return {"misses": 0}
    ready.sort()
    retried.sort()
    return {
        "misses": len(ready),
        "settled_after_p50_ms": statistics.median(ready),
        "settled_after_p99_ms": ready[max(int(len(ready) * 0.99) - 1, 0)],
        "retried_after_p50_ms": statistics.median(retried),
        "retried_after_p99_ms": retried[max(int(len(retried) * 0.99) - 1, 0)],
    }
