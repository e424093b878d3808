"""What the schedule script is given of a task: its score to the microsecond, and its
priority and group (nothing to parse when it has neither)."""

from __future__ import annotations

import random
from decimal import Decimal

from duetime.clock import MAX_MS, MIN_MS
from duetime.stores.base import NewTask
from duetime.stores.redis.codec import groups, priorities, score


def test_a_score_is_the_due_time_to_the_microsecond_exactly() -> None:
    rng = random.Random(23)
    assert score(NewTask("a", 1_900_000_000_000, "{}")) == 1_900_000_000_000
    assert score(NewTask("a", 1_900_000_000_000, "{}", lead_us=1)) == "1899999999999.999"
    assert score(NewTask("a", 5, "{}", lead_us=877)) == "4.123"
    assert score(NewTask("a", 0, "{}", lead_us=500)) == "-0.500"  # before the epoch
    for _ in range(5000):
        due, lead = rng.randrange(MIN_MS, MAX_MS), rng.randrange(1, 1000)
        got = score(NewTask("a", due, "{}", lead_us=lead))
        assert isinstance(got, str) and len(got.partition(".")[2]) == 3
        assert Decimal(got) == (Decimal(due * 1000 - lead) / 1000)


def test_priorities_and_groups_are_empty_when_no_task_has_one() -> None:
    plain = [NewTask("a", 1, "{}"), NewTask("b", 1, "{}")]
    assert (priorities(plain[:1]), groups(plain[:1])) == ("", "")
    assert (priorities(plain), groups(plain)) == ("", "")
    one = [NewTask("a", 1, "{}", priority=-5, group="g1")]
    assert (priorities(one), groups(one)) == ("-5", "g1\n")
    mixed = [NewTask("a", 1, "{}", priority=3), NewTask("b", 1, "{}", group="g")]
    assert (priorities(mixed), groups(mixed)) == ("3 0", "\ng\n")
