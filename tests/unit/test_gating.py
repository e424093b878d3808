"""The gates' arithmetic (duetime/stores/gating.py), which every store follows."""

from __future__ import annotations

from duetime.stores.gating import OPEN, Gate, GateState, after_claim, allowance, next_look, opens_at

NOW = 1_000_000


def test_without_a_gate_a_claim_takes_its_limit_unless_paused_or_held() -> None:
    assert allowance(None, OPEN, NOW, 50) == 50
    assert allowance(None, GateState(paused=True), NOW, 50) == 0
    assert allowance(None, GateState(hold_ms=NOW + 1), NOW, 50) == 0
    assert allowance(None, GateState(hold_ms=NOW), NOW, 50) == 50  # a hold that is over


def test_a_rate_allows_its_burst_then_one_start_per_interval() -> None:
    gate = Gate(interval_ms=20.0, burst=3.0)
    assert allowance(gate, OPEN, NOW, 100) == 3
    after = after_claim(gate, OPEN, NOW, 3)
    assert after.tat == NOW + 60
    assert allowance(gate, after, NOW, 100) == 0
    assert opens_at(gate, after, NOW) == NOW + 20
    assert allowance(gate, after, NOW + 19, 100) == 0
    assert allowance(gate, after, NOW + 20, 100) == 1
    assert allowance(gate, after, NOW + 1_000, 100) == 3  # never more than the burst


def test_a_fractional_interval_never_allows_more_than_the_rate() -> None:
    gate = Gate(interval_ms=1000 / 3, burst=1.0)  # 3/s, one at a time
    state, starts = OPEN, []
    for ms in range(3001):  # a claim every millisecond
        n = allowance(gate, state, NOW + ms, 10)
        state = after_claim(gate, state, NOW + ms, n)
        starts += [ms] * n
    # At most 0, 333.3, ..., 3000; claims at whole milliseconds come a fraction late.
    assert len(starts) in (9, 10)
    assert all(b - a >= 333 for a, b in zip(starts, starts[1:], strict=False))


def test_global_concurrency_allows_the_free_slots() -> None:
    gate = Gate(max_running=3)
    assert allowance(gate, GateState(running=1), NOW, 10) == 2
    assert allowance(gate, GateState(running=4), NOW, 10) == 0  # over (a lease not reaped)
    assert opens_at(gate, GateState(running=3), NOW) is None  # a settle wakes the workers


def test_a_held_claim_waits_for_the_gate_not_for_the_tasks_it_held() -> None:
    gate = Gate(interval_ms=100.0, burst=1.0)
    after = after_claim(gate, OPEN, NOW, 1)
    held = next_look(gate, after, NOW, held_back=True, due_ms=NOW - 5, lease_ms=NOW + 30_000)
    assert held == (NOW + 30_000, NOW + 100)
    # Nothing held back: the next due time, whatever the gate says.
    free = next_look(gate, after, NOW, held_back=False, due_ms=NOW + 500, lease_ms=None)
    assert free == (NOW + 500, None)
    paused = GateState(paused=True, hold_ms=NOW + 50)
    assert next_look(None, paused, NOW, held_back=True, due_ms=NOW, lease_ms=None) == (None, None)
    hold = GateState(hold_ms=NOW + 50)
    assert next_look(None, hold, NOW, held_back=True, due_ms=NOW, lease_ms=None) == (
        None,
        NOW + 50,
    )


def test_a_hold_and_a_rate_open_at_the_later_of_the_two() -> None:
    gate = Gate(interval_ms=100.0, burst=1.0)
    state = GateState(hold_ms=NOW + 50, tat=NOW + 300)
    assert opens_at(gate, state, NOW) == NOW + 300
    assert opens_at(gate, state._replace(hold_ms=NOW + 900), NOW) == NOW + 900
