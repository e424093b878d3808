"""What a minute's counts are: the kinds counted, and the lateness histogram's buckets, as
the store keeps them. Both sides use it: the worker's counting (:mod:`.counting`), on every
task, and the reading back (:mod:`.history`), so the worker never loads the reading side."""

from __future__ import annotations

#: Upper bounds (ms) of the lateness histogram's buckets; the last bucket has none.
LATENESS_BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000)
#: The name of each bucket's count: "late.<bound ms>", and "late.inf" for the last.
BUCKETS = (*(f"late.{b}" for b in LATENESS_BUCKETS_MS), "late.inf")
#: What is counted, as stored.
KINDS = ("fired", "succeeded", "failed", "retried", "dead_lettered", "missed")

Key = tuple[int, str, str]  # (minute start ms, task type, what)
