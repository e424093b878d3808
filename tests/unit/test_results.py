"""Results as the worker keeps them (``worker/results.py``, ``worker/notes.py``): JSON text,
64 KiB at most, refused with an Abort naming the size or the problem; carried by the run's
note only when there is one; a run without a result stays a plain completion (a line of a
batch on every store), one with a result a run of its own."""

from __future__ import annotations

from typing import Any

import pytest

import duetime
from duetime.stores.base import Outcome, done, new_claim
from duetime.stores.history import is_plain
from duetime.stores.redis.codec import settle_ops
from duetime.stores.runs import RunNote
from duetime.worker.notes import done_run, note
from duetime.worker.results import MAX_RESULT_BYTES, kept
from duetime.worker.run import Run

CLAIM = new_claim("t1", 7, 1, 1_000, '{"p":{}}')


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"rows": 1200, "é": [1, 2.5, None, True]}, '{"rows":1200,"é":[1,2.5,null,true]}'),
        ([], "[]"),
        ("x", '"x"'),
        (0, "0"),
        (False, "false"),
    ],
)
def test_a_result_is_kept_as_compact_json(value: Any, text: str) -> None:
    assert kept(value) == text


def test_a_result_of_64_kib_is_kept_and_one_byte_more_refused() -> None:
    assert len(kept("x" * (MAX_RESULT_BYTES - 2)).encode()) == MAX_RESULT_BYTES
    with pytest.raises(duetime.Abort, match=r"result too big: 65,537 bytes of JSON"):
        kept("x" * (MAX_RESULT_BYTES - 1))
    # Counted in bytes of UTF-8, not characters: 2 bytes each.
    with pytest.raises(duetime.Abort, match=r"result too big: 80,002 bytes"):
        kept("é" * 40_000)


@pytest.mark.parametrize("value", [{1, 2}, float("nan"), {"a": object()}, b"bytes"])
def test_a_result_json_cannot_carry_is_refused(value: object) -> None:
    with pytest.raises(duetime.Abort, match="result is not JSON"):
        kept(value)


def test_a_run_without_a_result_stays_a_plain_completion() -> None:
    plain = done_run(CLAIM, 1_010.7, 1_020, 1, 900)
    assert plain.note is not None and plain.note.result == "" and is_plain(plain.note)
    with_result = done_run(CLAIM, 1_010.7, 1_020, 1, 900, 0, '{"rows":1}')
    assert with_result.note is not None and not is_plain(with_result.note)
    assert with_result.note.result == '{"rows":1}'


def test_the_runner_notes_the_result_of_a_done_run_only() -> None:
    run = Run(CLAIM)
    run.fired_ms, run.result = 1_010.0, "[1]"
    assert note(run, done(CLAIM), 1_030).note.result == "[1]"  # type: ignore[union-attr]
    dead = Outcome("dead", CLAIM, None, "{}", "gone")
    assert note(run, dead, 1_030).note.result == ""  # type: ignore[union-attr]


def test_redis_settles_a_result_as_a_run_of_its_own_and_the_rest_in_a_batch() -> None:
    plain = done_run(CLAIM, 1_010.7, 1_020, 1, 900)
    other = new_claim("t2", 8, 1, 1_000, '{"p":{}}')
    with_result = done_run(other, 1_010.7, 1_020, 1, 900, 0, '{"rows":1}')
    ops, order = settle_ops([plain, with_result], True, 2_000, [], lambda task_id: task_id)
    assert ops[0] == "ran*" and "t1" in ops[1] and "t2" not in ops[1]
    assert ops[-2:] == ["result", '{"rows":1}'] and order == [plain, with_result]
    ops, _ = settle_ops([plain], True, 2_000, [], lambda task_id: task_id)
    assert "result" not in ops  # nothing of results on the wire without one


def test_a_note_without_a_result_is_as_before() -> None:
    assert RunNote(1, 2, 1, 0, "done").result == ""
