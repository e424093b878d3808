"""The worker's hot path on PostgreSQL: claim (reap, then lease) and settle, a statement a
batch each."""

from __future__ import annotations

from collections.abc import Sequence

from duetime.stores.base import Claim, ClaimBatch, Outcome, new_claim
from duetime.stores.gating import Gate, GateState, next_look
from duetime.stores.postgres.conditional import remember_finished
from duetime.stores.postgres.connection import Conn
from duetime.stores.postgres.ops import Queues, write
from duetime.stores.postgres.queries import Q

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
) -> ClaimBatch:
    """Reap expired leases at ``now_ms``, then lease up to ``limit`` tasks due by ``now_ms +
    lookahead_ms`` that the type's gates allow, earliest first (the lease counts from now),
    in one transaction whose statements go to the server together (a pipeline: one round
    trip). A claim under a rate or a global concurrency locks its queue's row first."""
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
    statement = Q.claim
    if gate is not None:
        statement = Q.claim_gated
        claim_params.update(
            interval=gate.interval_ms, burst=gate.burst, max_running=gate.max_running
        )
    count_running = gate is not None and gate.max_running > 0
    async with conn.pipeline(), conn.transaction():
        await conn.execute(Q.claim_plan)
        if gate is not None:
            await conn.execute(Q.lock_gate, {"qid": qid})
        reaping = await conn.execute(Q.reap, reap_params)
        leasing = await conn.execute(statement, claim_params) if limit > 0 else None
        looking = await conn.execute(Q.next_ms, {"qid": qid, "count_running": count_running})
    reaped = await reaping.fetchall()
    vacant = [task_id for task_id, is_vacant in reaped if is_vacant]
    if vacant:  # leases of cancelled tasks: nothing is left of them
        await conn.execute(Q.vacate, {"qid": qid, "ids": vacant})
    claims, picked = [], 0
    if leasing is not None:
        rows = sorted(await leasing.fetchall(), key=lambda r: (r[3], r[0]))
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
    return ClaimBatch(claims, next_ms, len(reaped), open_ms)


async def settle(
    conn: Conn, queues: Queues, task_type: str, outcomes: Sequence[Outcome], now_ms: int
) -> list[bool]:
    """Apply outcomes whose claim still holds the lease; per outcome, whether it was kept.

    Done outcomes that write nothing else go first, in one DELETE (settle_drop.sql): the
    common case is then one statement. The rest, and done outcomes of tasks rescheduled
    while they ran, go in one UPDATE (settle.sql), followed, in the same transaction, by
    the dead letters (``dead_id``) and new tasks (``spawn``) of the outcomes kept and the
    deletion of the rows left empty. A batch with runs of tasks scheduled with
    ``unique_for`` (``unique_ms``) is one transaction, which also remembers their finishes.
    """
    qid = await queues.find(conn, task_type)
    if qid is None:
        return [False] * len(outcomes)
    if any(o.unique_ms for o in outcomes):  # runs of tasks scheduled with unique_for
        async with conn.transaction():  # the finishes are remembered with the settle
            kept = await _settle(conn, queues, qid, task_type, outcomes, now_ms)
            ended = [o for o in outcomes if kept is None or (o.claim.id, o.claim.token) in kept]
            await remember_finished(conn, qid, ended, now_ms)
    else:
        kept = await _settle(conn, queues, qid, task_type, outcomes, now_ms)
    if kept is None:
        return [True] * len(outcomes)  # the common settle
    return [(o.claim.id, o.claim.token) in kept for o in outcomes]


async def _settle(
    conn: Conn, queues: Queues, qid: int, task_type: str, outcomes: Sequence[Outcome], now_ms: int
) -> set[tuple[str, int]] | None:
    """The (id, token) of each outcome kept; None when every one was."""
    kept: set[tuple[str, int]] = set()
    plain = [o for o in outcomes if o.op == "done" and not o.dead_id and o.spawn is None]
    if plain:
        wake = {"now": now_ms, "channel": queues.channel, "type": task_type}
        cur = await conn.execute(Q.settle_drop, {"qid": qid, **_claims(plain), **wake})
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
            kept |= await _settle_rest(conn, queues, qid, task_type, rest, now_ms)
    return kept


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
