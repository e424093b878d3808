"""What stores read, as the protocol's values whatever the bytes (stores/wire.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from duetime.stores import wire


@given(st.binary(max_size=64))
def test_any_bytes_read_as_text_go_back_as_the_same_bytes(raw: bytes) -> None:
    text = wire.text(raw)
    assert wire.to_bytes(text) == raw
    assert wire.is_utf8(text) == _is_utf8(raw)
    assert wire.param(text) == (text if _is_utf8(raw) else raw)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


def test_values_of_any_type_read_as_text() -> None:
    assert wire.text("ok") == "ok"
    assert wire.text(bytearray(b"ok")) == "ok"
    assert wire.text(42) == "42"
    assert wire.maybe_text(None) is None and wire.maybe_text(b"x") == "x"
    assert wire.param(None) is None


def test_times_read_as_whole_ms_or_as_unreadable() -> None:
    assert [wire.ms(v) for v in (12, b"12", "12", b"1.5e3", 2.9, b" 7 ")] == [
        12,
        12,
        12,
        1500,
        2,
        7,
    ]
    unreadable = (b"-inf", b"inf", float("nan"), "abc", b"\xff", None, b"")
    assert all(wire.ms(v) == wire.UNREADABLE_MS for v in unreadable)
    assert [wire.readable(v) for v in (None, b"", b"x", b"5")] == [None, None, None, 5]


def test_counts_read_as_zero_when_missing_unreadable_or_negative() -> None:
    assert [wire.count(v) for v in (None, b"3", b"x", -2, 4)] == [0, 3, 0, 0, 4]
