"""bench/ab.py's report: the figures of two revisions side by side, with B/A and its spread."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, NamedTuple


class Metric(NamedTuple):
    key: str
    label: str
    higher_is_better: bool
    workload: str  # the workload that measures it
    scale: float = 1.0  # what a figure is multiplied by to be shown (1e-6: in millions)
    redis_only: bool = False  # measured on Redis alone (the server's time in scripts)


METRICS = (
    Metric("w1_per_s", "W1 one call /s", True, "w1"),
    Metric("w1m_per_s", "W1m merge call /s", True, "w1m"),
    Metric("w1_server_us_per_call", "W1 Redis scripts µs/call", False, "w1", redis_only=True),
    Metric("w1_instructions_per_call", "W1i producer instructions/call", False, "w1i"),
    # The rest of the counted process: the interpreter's start, the imports, connecting.
    Metric("w1_start_instructions", "W1i producer start, M instructions", False, "w1i", 1e-6),
    Metric("w2_start_to_last_per_s", "W2 start→last /s", True, "w2"),
    Metric("w2_first_to_last_per_s", "W2 first→last /s", True, "w2"),
    Metric("w2_startup_s", "W2 start→first handler s", False, "w2"),
    Metric("w2_cpu_us_per_task", "W2 worker CPU µs/task", False, "w2"),
    Metric("w2_server_us_per_task", "W2 Redis scripts µs/task", False, "w2", redis_only=True),
    Metric("w2_instructions_per_task", "W2i worker instructions/task", False, "w2i"),
    Metric("w2_start_instructions", "W2i worker start, M instructions", False, "w2i", 1e-6),
    Metric(
        "w2_server_instructions_per_task",
        "W2s Redis server instructions/task",
        False,
        "w2s",
        redis_only=True,
    ),
    Metric("w3_p50_ms", "W3 p50 ms", False, "w3"),
    Metric("w3_p99_ms", "W3 p99 ms", False, "w3"),
)


def number(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def spread(values: Sequence[float]) -> str:
    """The median, and the min–max when there is more than one value."""
    med = number(statistics.median(values))
    if len(values) == 1:
        return med
    return f"{med} ({number(min(values))}–{number(max(values))})"


def series(
    results: Sequence[dict[str, Any]], store: str, rev: str, key: str, scale: float = 1.0
) -> list[float]:
    """One figure of one revision on one store, by round."""
    rows = sorted(
        (r for r in results if r["store"] == store and r["rev"] == rev and key in r),
        key=lambda r: r["round"],
    )
    return [float(r[key]) * scale for r in rows]


def reading(a: Sequence[float], b: Sequence[float], higher_is_better: bool) -> str:
    """What the rounds say: B better or worse when B's figures all lie beyond A's (their
    ranges do not overlap), else noise. Two revisions that are the same part that way by
    chance 2 times in C(2n, n): 1 in 10 with 3 rounds, 1 in 126 with 5."""
    if len(a) < 2 or len(b) < 2:
        return "(one round)"
    if min(b) > max(a) or max(b) < min(a):
        return "B better" if (min(b) > max(a)) == higher_is_better else "B worse"
    return "within noise"


def row(results: Sequence[dict[str, Any]], store: str, metric: Metric) -> list[str] | None:
    a = series(results, store, "A", metric.key, metric.scale)
    b = series(results, store, "B", metric.key, metric.scale)
    if not a or not b:
        return None
    # Each round's pair ran back to back, so their ratio cancels most of what the machine
    # did meanwhile; the spread of those ratios is the noise the median ratio carries.
    pairs = [y / x for x, y in zip(a, b, strict=True) if x > 0]
    ratio = statistics.median(b) / statistics.median(a) if statistics.median(a) > 0 else 0.0
    ratio_text = f"{ratio:.2f}"
    if len(pairs) > 1:
        ratio_text += f" ({min(pairs):.2f}–{max(pairs):.2f})"
    return [
        metric.label,
        spread(a),
        spread(b),
        ratio_text,
        reading(a, b, metric.higher_is_better),
    ]


def table(results: Sequence[dict[str, Any]], store: str, labels: tuple[str, str]) -> str:
    """A Markdown table of every metric on ``store``: A, B, B/A and what it says."""
    head = [
        store,
        f"A: {labels[0]}, median (min–max)",
        f"B: {labels[1]}, median (min–max)",
        "B/A of medians (per round)",
        "reading",
    ]
    rows = [r for m in METRICS if (r := row(results, store, m)) is not None]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)
