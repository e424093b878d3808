"""The values that cross the store boundary: a task to write, a claim and a claim's batch, a
run's outcome, a task as stored (the :class:`~duetime.stores.base.Store` protocol moves
them; :mod:`duetime.stores.base` names them too)."""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

from duetime.stores.runs import RunNote

State = Literal["due", "running", "dead"]
Op = Literal["done", "next", "retry", "dead", "release", "hold"]


class NewTask(NamedTuple):
    """A task to write: its id, due time, record, priority (-100 to 100: among due tasks of
    its type, higher is claimed first) and group ("" for none: a type's group limits hold
    each group to its own share, see :class:`~duetime.stores.gating.Gate`). The store keeps
    the priority and the group with the task until the task is gone or scheduled again.

    ``lead_us`` (0 to 999): how many microseconds before ``due_ms`` (a whole millisecond,
    rounded up) the task is due. A store that keeps due times finer than a millisecond
    (Redis) keeps it, and its claims give it back (:attr:`Claim.lead_us`); another ignores
    it, and the task starts at ``due_ms``."""

    id: str
    due_ms: int
    record: str
    priority: int = 0
    group: str = ""
    lead_us: int = 0


class Claim(NamedTuple):
    """A task leased to one worker.

    Attributes:
        token: the fencing token; later claims of the same type get larger ones. Every
            write about this run carries the claim, and is refused once the lease is lost.
        stalls: how many earlier claims of this occurrence ended with an expired lease.
            (Failed attempts are counted in the record, which the worker writes.)
        due_ms: when the task was due as it was claimed (a whole millisecond, rounded up).
        lead_us: how many microseconds before ``due_ms`` it was due (0 to 999; 0 from a
            store that keeps whole milliseconds): the worker starts it then.
    """

    id: str
    token: int
    stalls: int
    due_ms: int
    record: str
    lead_us: int = 0


class ClaimBatch(NamedTuple):
    """What one claim returns.

    Attributes:
        next_ms: the earliest lease deadline left for the type, and the earliest due time
            unless a gate holds the type's due tasks back (it is paused, held, at its rate
            or at its global concurrency), or None. A worker sleeps until then unless woken.
        reaped: how many expired leases were handled on the way.
        open_ms: when a gate that holds due tasks back opens by time (a rate's next start,
            a handler's hold), or None: while paused or at its global concurrency the
            worker waits for a wake-up (resume and the settle that frees a slot publish one).
    """

    claims: list[Claim]
    next_ms: int | None
    reaped: int = 0
    open_ms: int | None = None


class Outcome(NamedTuple):
    """How a run ended and what follows it; see :meth:`Store.settle`.

    ``aborted`` marks the outcome of a run that was aborted (``App.abort``, or a cron
    schedule's ``overlap="cancel_other"``): its op is ``done`` (the task ends) or ``next``
    (a series goes on), never a retry or a dead letter, and ``error`` says why. A store
    writes it as the op says; the worker's note of the run (below) says ``aborted``.
    ``note``: what the run history keeps of the run, when the settle records it
    (``RunHistory.settle``).
    """

    op: Op
    claim: Claim
    due_ms: int | None = None
    record: str = ""
    error: str = ""
    dead_id: str = ""
    dead_record: str = ""
    spawn: NewTask | None = None
    unique_ms: int = 0
    aborted: bool = False
    note: RunNote | None = None


_new = tuple.__new__


def done(claim: Claim, unique_ms: int = 0) -> Outcome:
    """``Outcome("done", claim)``, built the cheapest way: it ends almost every run."""
    return _new(Outcome, ("done", claim, None, "", "", "", "", None, unique_ms, False, None))


#: Where an outcome's note is (``Outcome.note``), for the hot paths that read by index.
NOTE: Final = 10


def noted(outcome: Outcome, note: RunNote) -> Outcome:
    """``outcome._replace(note=note)``, built the cheapest way (on every recorded run)."""
    return _new(Outcome, (*outcome[:NOTE], note))


def new_claim(
    task_id: str, token: int, stalls: int, due_ms: int, record: str, lead_us: int = 0
) -> Claim:
    """``Claim(...)``, built the cheapest way: a store makes one for every task it leases."""
    return _new(Claim, (task_id, token, stalls, due_ms, record, lead_us))


class StoredTask(NamedTuple):
    """One task as the store holds it.

    Attributes:
        score_ms: the due time for due tasks, the lease deadline for running tasks and the
            time of death for dead ones.
        due_ms: the due time of the run (for running tasks, the one they were claimed at).
        record: the record string, or None when it is missing (a dead letter may lack one).
        stalls: expired leases of the current occurrence.
        error: the last error, or why the task is dead.
        priority: its priority (0 unless scheduled with another).
        group: its group ("" for none).
    """

    id: str
    state: State
    score_ms: int
    due_ms: int
    record: str | None
    stalls: int
    error: str | None
    priority: int = 0
    group: str = ""
