"""The back-off formula: bounded by its cap, growing with the retry, never raising."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

import duetime
from duetime._backoff import backoff_delay

retries = st.one_of(
    st.integers(min_value=1, max_value=10**6),
    st.integers(min_value=10**6, max_value=10**400),  # beyond what a float can hold
)
firsts = st.floats(min_value=0, max_value=1e6)
caps = st.floats(min_value=0, max_value=1e300)
factors = st.floats(min_value=1, max_value=1e3)


@given(retries, firsts, caps, factors, st.floats(min_value=0, max_value=1))
def test_the_wait_is_bounded_by_the_cap_and_never_raises(
    retry: int, first: float, cap: float, factor: float, jitter: float
) -> None:
    wait = backoff_delay(retry, first, cap, factor=factor, jitter=jitter)
    assert 0 <= wait <= cap


@given(retries, retries, firsts, caps, factors)
def test_the_wait_grows_with_the_retry_up_to_the_cap(
    a: int, b: int, first: float, cap: float, factor: float
) -> None:
    low, high = sorted((a, b))
    assert backoff_delay(low, first, cap, factor=factor, jitter=0) <= backoff_delay(
        high, first, cap, factor=factor, jitter=0
    )


def test_a_late_retry_waits_the_cap_where_the_power_alone_would_overflow() -> None:
    # 2.0 ** 1024 is past the largest float: the 1,025th retry raised OverflowError.
    assert backoff_delay(1025, 0.0002, 0.004, jitter=0) == 0.004
    assert backoff_delay(10**400, 1, 3600, jitter=0) == 3600
    unlimited = duetime.Backoff(base=timedelta(seconds=1), cap=timedelta(hours=1), jitter=0)
    assert unlimited.delay_ms(1025) == unlimited.delay_ms(10**6) == 3_600_000


def test_below_the_cap_the_wait_is_exact() -> None:
    assert [backoff_delay(n, 100, 10**6, jitter=0) for n in range(1, 5)] == [100, 200, 400, 800]
