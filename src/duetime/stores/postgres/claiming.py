"""The worker's hot path on PostgreSQL: claim (reap, then lease) and settle, a statement a
batch each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duetime.stores.base import Claim, ClaimBatch, Outcome, new_claim
from duetime.stores.gating import Gate, GateState, next_look
from duetime.stores.history import Newest, crashed, is_plain, pack, row_runs
from duetime.stores.postgres import groups
from duetime.stores.postgres.conditional import remember_finished
from duetime.stores.postgres.connection import Conn
from duetime.stores.postgres.ops import Queues, write
from duetime.stores.postgres.queries import Q
from duetime.stores.runs import RunLog, RunNote, StoredRun

#: Most expired leases reaped by one claim, so that one claim stays short; the rest are
#: reaped by the next ones.
REAP_BATCH = 1000


async def claim(
    conn: Conn,
    queues: Queues,
    task_type: str,
    now_ms: int,
    limit: int,
    lease_ms: int,
    max_stalls: int,
    at_most_once: bool,
    lookahead_ms: int,
    gate: Gate | None = None,
    record: RunLog | None = None,
) -> ClaimBatch:
    """Reap expired leases at ``now_ms``, then lease up to ``limit`` tasks due by ``now_ms +
    lookahead_ms`` that the type's gates allow, highest priority first, then earliest due
    (the lease counts from now); under group limits, the groups in turn, each within its
    limits (claim_grouped.sql), in one transaction whose statements go to the server
    together (a pipeline: one round trip). A claim under a rate, a global concurrency or
    group limits locks its queue's row first. With
    ``record``, the runs of the leases reaped are then recorded in the type's history (a
    statement of their own, after the claim: a claimer that dies in between leaves them
    out)."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return ClaimBatch([], None, 0)
    reap_params = {
        "qid": qid,
        "now": now_ms,
        "max_stalls": max_stalls,
        "at_most_once": at_most_once,
        "batch": REAP_BATCH,
    }
    horizon = now_ms + lookahead_ms
    claim_params: dict[str, object] = {
        "qid": qid,
        "horizon": horizon,
        "limit": limit,
        "deadline": now_ms + lease_ms,
        "now": now_ms,
    }
    statement = _statement(gate)
    claim_params.update(_gate_params(gate, limit))
    count_running = gate is not None and gate.max_running > 0
    async with conn.pipeline(), conn.transaction():
        if gate is not None:
            await conn.execute(Q.lock_gate, {"qid": qid})
        reaping = await conn.execute(Q.reap, reap_params)
        leasing = await conn.execute(statement, claim_params) if limit > 0 else None
        looking = await conn.execute(Q.next_ms, {"qid": qid, "count_running": count_running})
        if record is not None:  # the runs that aged out go, as a worker looks for work
            cutoff = now_ms - record.max_age_ms
            await conn.execute(Q.trim_runs_age, {"qid": qid, "cutoff": cutoff})
    reaped = await reaping.fetchall()
    vacant = [row[0] for row in reaped if row[1]]
    if vacant:  # leases of cancelled tasks: nothing is left of them
        await conn.execute(Q.vacate, {"qid": qid, "ids": vacant})
    if record is not None and reaped:
        runs = [
            (row[0], run)
            for row in reaped
            if (run := crashed(row[2], row[3], row[4], row[5], now_ms)) is not None
        ]
        if runs:
            await conn.execute(Q.add_runs, _runs(qid, runs, record._replace(worker=""), now_ms))
    rows = [] if leasing is None else await leasing.fetchall()
    # The last row of a grouped claim tells of the groups it visited.
    visit = groups.Visit.of(rows.pop()) if rows and statement is Q.claim_grouped else None
    rows.sort(key=lambda r: (-(r[5] or 0), r[3], r[0]))
    claims = [new_claim(r[0], r[1], r[2], r[3], r[4]) for r in rows if r[1] is not None]
    picked = len(rows)
    row = await looking.fetchone()
    assert row is not None
    due, deadline, paused, hold_ms, tat, running = row
    after = GateState(bool(paused), hold_ms, tat, int(running))
    held_back = picked < limit and due is not None and due <= horizon
    next_ms, open_ms = next_look(
        gate, after, now_ms, held_back=held_back, due_ms=due, lease_ms=deadline
    )
    if visit is not None and picked == 0 and held_back and open_ms is None:
        next_ms, open_ms = visit.look(limit, next_ms, deadline)
    return ClaimBatch(claims, next_ms, len(reaped), open_ms)


def _statement(gate: Gate | None) -> bytes:
    """The claim's statement: claim.sql without gates, claim_gated.sql under a type's
    limits, claim_grouped.sql under group limits."""
    if gate is None:
        return Q.claim
    return Q.claim_grouped if gate.grouped else Q.claim_gated


def _gate_params(gate: Gate | None, limit: int) -> dict[str, object]:
    """The parameters of the claim's statement beyond claim.sql's."""
    if gate is None:
        return {}
    params: dict[str, object] = {
        "interval": gate.interval_ms,
        "burst": gate.burst,
        "max_running": gate.max_running,
    }
    if gate.grouped:
        params.update(groups.claim_params(gate, limit))
    return params


async def settle(
    conn: Conn,
    queues: Queues,
    task_type: str,
    outcomes: Sequence[Outcome],
    now_ms: int,
    record: RunLog | None = None,
) -> list[bool]:
    """Apply outcomes whose claim still holds the lease; per outcome, whether it was kept.

    Done outcomes that write nothing else go first, in one DELETE (settle_drop.sql): the
    common case is then one statement. The rest, and done outcomes of tasks rescheduled
    while they ran, go in one UPDATE (settle.sql), followed, in the same transaction, by
    the dead letters (``dead_id``) and new tasks (``spawn``) of the outcomes kept and the
    deletion of the rows left empty. A batch with runs of tasks scheduled with
    ``unique_for`` (``unique_ms``) is one transaction, which also remembers their finishes.
    With ``record``, the runs of the outcomes kept that carry a note are recorded in the
    same statement (settle_drop_logged.sql) or transaction (add_runs.sql).
    """
    qid = await queues.find(conn, task_type)
    if qid is None:
        return [False] * len(outcomes)
    if any(o.unique_ms for o in outcomes):  # runs of tasks scheduled with unique_for
        async with conn.transaction():  # the finishes are remembered with the settle
            kept = await _settle(conn, queues, qid, task_type, outcomes, now_ms, record)
            ended = [o for o in outcomes if kept is None or (o.claim.id, o.claim.token) in kept]
            await remember_finished(conn, qid, ended, now_ms)
    else:
        kept = await _settle(conn, queues, qid, task_type, outcomes, now_ms, record)
    if kept is None:
        return [True] * len(outcomes)  # the common settle
    return [(o.claim.id, o.claim.token) in kept for o in outcomes]


async def _settle(
    conn: Conn,
    queues: Queues,
    qid: int,
    task_type: str,
    outcomes: Sequence[Outcome],
    now_ms: int,
    record: RunLog | None,
) -> set[tuple[str, int]] | None:
    """The (id, token) of each outcome kept; None when every one was. With ``record``, the
    runs of the outcomes kept that carry a note are recorded in the same statement
    (settle_drop_logged.sql) or transaction (add_runs.sql)."""
    kept: set[tuple[str, int]] = set()
    plain = [o for o in outcomes if o.op == "done" and not o.dead_id and o.spawn is None]
    if record is not None:  # a run other than a plain completion's is a row of its own
        plain = [o for o in plain if o.note is None or is_plain(o.note)]
    if plain:
        wake = {"now": now_ms, "channel": queues.channel, "type": task_type}
        if record is None:
            cur = await conn.execute(Q.settle_drop, {"qid": qid, **_claims(plain), **wake})
        else:
            params = {**_batch(qid, plain, record, now_ms), **wake}
            cur = await conn.execute(Q.settle_drop_logged, params)
        row = await cur.fetchone()
        assert row is not None
        deleted, ids, tokens = row
        if deleted == len(plain):  # every one kept (their ids are distinct)
            if len(plain) == len(outcomes):
                return None  # the common settle: every one kept
            kept.update((o.claim.id, o.claim.token) for o in plain)
        else:
            kept.update(zip(ids or [], tokens or [], strict=True))
    rest = [o for o in outcomes if (o.claim.id, o.claim.token) not in kept]
    if rest:
        async with conn.transaction():
            ended = await _settle_rest(conn, queues, qid, task_type, rest, now_ms)
            kept |= ended
            noted = [
                (o.claim.id, o.note)
                for o in rest
                if o.note is not None and (o.claim.id, o.claim.token) in ended
            ]
            if record is not None and noted:
                await conn.execute(Q.add_runs, _runs(qid, noted, record, now_ms))
    return kept


def _batch(qid: int, plain: Sequence[Outcome], record: RunLog, now_ms: int) -> dict[str, Any]:
    """The parameters of settle_drop_logged.sql: the plain completions, each with its run as
    a line of the batch (None for one without a note)."""
    lines = [None if o.note is None else pack([(o.claim.id, o.note)], now_ms) for o in plain]
    return {**_log(qid, record, now_ms), **_claims(plain), "now": now_ms, "lines": lines}


def _log(qid: int, record: RunLog, now_ms: int) -> dict[str, Any]:
    return {
        "qid": qid,
        "cutoff": now_ms - record.max_age_ms,
        "keep": record.keep,
        "worker": record.worker or None,
    }


def _runs(
    qid: int, runs: Sequence[tuple[str, RunNote]], record: RunLog, now_ms: int
) -> dict[str, Any]:
    """The parameters of add_runs.sql for ``runs`` (id, note), a row each."""
    notes = [n for _, n in runs]
    return {
        **_log(qid, record, now_ms),
        "ids": [task_id for task_id, _ in runs],
        "occurrences": [n.occurrence_ms for n in notes],
        "attempts": [n.attempt for n in notes],
        "starts": [n.started_ms or None for n in notes],
        "finishes": [n.finished_ms for n in notes],
        "outcomes": [n.outcome for n in notes],
        "errors": [n.error or None for n in notes],
        "traces": [n.trace or None for n in notes],
        "results": [n.result or None for n in notes],
    }


#: Rows of a queue's run history read at a time.
RUNS_PAGE = 100


async def read_runs(
    conn: Conn,
    queues: Queues,
    task_type: str,
    task_id: str | None,
    limit: int,
    since_ms: int | None,
) -> list[StoredRun]:
    """The type's newest runs (see ``RunHistory.runs``), read a page of rows at a time."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return []
    newest = Newest(task_id, limit, since_ms)
    since = -(2**62) if since_ms is None else since_ms
    after = (2**62, 2**62)
    while True:
        params = {"qid": qid, "since": since, "added": after[0], "n": after[1], "rows": RUNS_PAGE}
        cur = await conn.execute(Q.list_runs, params)
        rows = await cur.fetchall()
        if newest.page([row_runs(row[2:]) for row in rows]) or len(rows) < RUNS_PAGE:
            return newest.found
        after = (rows[-1][0], rows[-1][1])


async def _settle_rest(
    conn: Conn, queues: Queues, qid: int, task_type: str, given: list[Outcome], now_ms: int
) -> set[tuple[str, int]]:
    # A hold is a release (to the due time it was claimed at) that also holds the type.
    rest = [o._replace(op="release", due_ms=o.claim.due_ms) if o.op == "hold" else o for o in given]
    params = {
        "qid": qid,
        "now": now_ms,
        "channel": queues.channel,
        "type": task_type,
        **_claims(rest),
        "ops": [o.op for o in rest],
        "dues": [o.due_ms for o in rest],
        "records": [o.record for o in rest],
        "errors": [o.error for o in rest],
    }
    cur = await conn.execute(Q.settle, params)
    rows = await cur.fetchall()
    kept = {(row[0], row[1]) for row in rows}
    vacant = [row[0] for row in rows if row[2]]
    group_of = {row[0]: row[3] for row in rows}
    done = [o for o in rest if (o.claim.id, o.claim.token) in kept]
    dead = [o for o in done if o.dead_id]
    if dead:
        await conn.execute(
            Q.file_dead,
            {
                "qid": qid,
                "now": now_ms,
                "ids": [o.dead_id for o in dead],
                "records": [o.dead_record for o in dead],
                "errors": [o.error for o in dead],
                "groups": [group_of.get(o.claim.id) for o in dead],
            },
        )
    spawns = {o.spawn.id: o.spawn for o in done if o.spawn is not None}
    if spawns:
        await write(conn, queues, qid, task_type, list(spawns.values()))
    if vacant:
        await conn.execute(Q.vacate, {"qid": qid, "ids": vacant})
    holds = [o.due_ms for o in given if o.op == "hold" and (o.claim.id, o.claim.token) in kept]
    if holds:
        await conn.execute(Q.hold, {"until": max(h for h in holds if h is not None), "qid": qid})
    return kept


def _claims(outcomes: Sequence[Outcome]) -> dict[str, list[str] | list[int]]:
    return {"ids": [o.claim.id for o in outcomes], "tokens": [o.claim.token for o in outcomes]}


async def extend(
    conn: Conn, queues: Queues, task_type: str, claims: Sequence[Claim], deadline_ms: int
) -> list[Claim]:
    """Push the lease deadline of each claim whose token holds the lease; the others."""
    qid = await queues.find(conn, task_type)
    if qid is None:
        return list(claims)
    params = {
        "qid": qid,
        "deadline": deadline_ms,
        "ids": [c.id for c in claims],
        "tokens": [c.token for c in claims],
    }
    cur = await conn.execute(Q.extend_lease, params)
    held = {(row[0], row[1]) for row in await cur.fetchall()}
    return [c for c in claims if (c.id, c.token) not in held]
