"""The arithmetic of a task type's gates, the same in every store: how many tasks a claim may
start, the state the gates are in after it, and when a worker should look again.

The SQLite store runs it inside its claim's transaction; the PostgreSQL store computes the
allowance in its claim statement (``claim_gated.sql``) and the times here; the Redis
store's ``lua/_gate.lua`` is a copy of it in Lua. The rate is a GCRA: the store keeps one
time per type, the theoretical arrival time (``tat``) of the next start at the steady rate;
a start is allowed at ``now`` while ``tat - now`` is within the tolerance ``(burst - 1) *
interval``, and each start moves ``tat`` on by the interval.
"""

from __future__ import annotations

import math
from typing import NamedTuple

#: Slack in comparisons of rate times, which are fractions of a millisecond.
EPSILON = 1e-6


class Gate(NamedTuple):
    """The limits a claim of a type is held to across every worker, from the type's code
    (its ``rate``, ``global_concurrency``, ``group_rate`` and ``group_concurrency``); the
    state they need lives in the store.

    The group limits hold each group of the type's tasks (``NewTask.group``) on its own:
    a group at its limit is passed over without looking at its backlog, and the other
    groups' tasks are claimed. Tasks without a group are held by the type's limits alone.

    Attributes:
        interval_ms: the rate's time between two starts (0: no rate).
        burst: how many starts the rate allows at once (1 or more; fractional for a
            partition's share).
        max_running: most tasks of the type running at once (0: no limit).
        group_interval_ms: each group's rate's time between two starts (0: none).
        group_burst: how many starts of one group its rate allows at once.
        group_running: most tasks of one group running at once (0: no limit).
    """

    interval_ms: float = 0.0
    burst: float = 1.0
    max_running: int = 0
    group_interval_ms: float = 0.0
    group_burst: float = 1.0
    group_running: int = 0

    @property
    def grouped(self) -> bool:
        """Whether each group of the type's tasks has limits of its own."""
        return self.group_running > 0 or self.group_interval_ms > 0

    @property
    def per_group(self) -> Gate:
        """One group's limits as a gate of their own (a rate and a most running), for
        :func:`allowance` and its kin with the group's state."""
        return Gate(self.group_interval_ms, self.group_burst, self.group_running)

    def share(self, part: int, parts: int) -> Gate:
        """The share of partition ``part`` of ``parts``: the rates divided evenly, the
        running slots dealt out (the first partitions get one more when they do not divide),
        so that the partitions' shares together never exceed this gate; the same for each
        group's limits (a group's tasks are spread over the partitions by id too)."""

        def slots(most: int) -> int:
            return most // parts + (1 if part < most % parts else 0) if most else 0

        def spaced(interval: float) -> float:
            return interval * parts if interval else 0.0

        def bucket(burst: float, interval: float) -> float:
            return burst / parts if interval else 1.0

        return Gate(
            spaced(self.interval_ms),
            bucket(self.burst, self.interval_ms),
            slots(self.max_running),
            spaced(self.group_interval_ms),
            bucket(self.group_burst, self.group_interval_ms),
            slots(self.group_running),
        )


class GateState(NamedTuple):
    """What the store holds of a type's gates, and the tasks running.

    Attributes:
        paused: the type is paused.
        hold_ms: no start before this (a handler's RateLimited), or None.
        tat: the rate's theoretical arrival time, ms, or None before the first start.
        running: the type's tasks holding a lease (counted only for a global concurrency).
    """

    paused: bool = False
    hold_ms: int | None = None
    tat: float | None = None
    running: int = 0


OPEN = GateState()


def allowance(gate: Gate | None, state: GateState, now_ms: int, limit: int) -> int:
    """How many tasks a claim at ``now_ms`` may start: ``limit`` at most, none while the type
    is paused or held."""
    if state.paused or (state.hold_ms is not None and state.hold_ms > now_ms):
        return 0
    n = limit
    if gate is None:
        return n
    if gate.max_running > 0:
        n = min(n, max(0, gate.max_running - state.running))
    if gate.interval_ms > 0:
        base = now_ms if state.tat is None else max(state.tat, now_ms)
        tolerance = (gate.burst - 1) * gate.interval_ms
        ahead = base - now_ms
        if ahead > tolerance + EPSILON:
            return 0
        n = min(n, math.floor((tolerance - ahead) / gate.interval_ms + EPSILON) + 1)
    return n


def after_claim(gate: Gate | None, state: GateState, now_ms: int, started: int) -> GateState:
    """The gates' state once a claim at ``now_ms`` started ``started`` tasks."""
    if gate is None or started == 0:
        return state
    tat = state.tat
    if gate.interval_ms > 0:
        tat = (now_ms if tat is None else max(tat, now_ms)) + started * gate.interval_ms
    return state._replace(tat=tat, running=state.running + started)


def group_state(running: int, tat: float | None) -> GateState:
    """The state of one group's limits: its tasks running and its rate's time."""
    return GateState(tat=tat, running=running)


def full(gate: Gate | None, state: GateState) -> bool:
    """Whether the type runs as many tasks as its global concurrency allows."""
    return gate is not None and gate.max_running > 0 and state.running >= gate.max_running


def opens_at(gate: Gate | None, state: GateState, now_ms: int) -> int | None:
    """When a gate that is closed at ``now_ms`` opens by time alone (a hold ends, the rate
    allows a start), or None: it is paused, or only its global concurrency holds it (a
    settle that frees a slot wakes the workers)."""
    if state.paused:
        return None
    at: float | None = None
    if state.hold_ms is not None and state.hold_ms > now_ms:
        at = state.hold_ms
    if gate is not None and gate.interval_ms > 0 and state.tat is not None:
        opens = max(state.tat, now_ms) - (gate.burst - 1) * gate.interval_ms
        if opens > now_ms + EPSILON:
            at = opens if at is None else max(at, opens)
    return None if at is None else math.ceil(at - EPSILON)


def next_look(
    gate: Gate | None,
    state: GateState,
    now_ms: int,
    *,
    held_back: bool,
    due_ms: int | None,
    lease_ms: int | None,
) -> tuple[int | None, int | None]:
    """``(next_ms, open_ms)`` of a claim's batch (see ``ClaimBatch``), from the gates'
    state after the claim.

    Args:
        held_back: a task due by the claim's horizon is left, and the claim took fewer
            than it asked for.
        due_ms: the earliest due time left, or None.
        lease_ms: the earliest lease deadline left, or None.
    """
    if held_back and allowance(gate, state, now_ms, 1) == 0:
        return lease_ms, opens_at(gate, state, now_ms)
    if due_ms is None or (lease_ms is not None and lease_ms < due_ms):
        return lease_ms, None
    return due_ms, None
