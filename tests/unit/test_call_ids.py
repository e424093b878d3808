"""The ids of script calls (the keys of resend markers) never repeat, not even in a forked
child: a repeated id would make a call take another's marker for its own and write nothing."""

from __future__ import annotations

import os

from duetime.stores.redis.keys import call_id


def test_call_ids_do_not_repeat_in_a_process() -> None:
    ids = [call_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)


def test_a_forked_child_draws_ids_of_its_own() -> None:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next ids and leave at once
        try:
            os.write(write_end, " ".join(call_id() for _ in range(3)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [call_id() for _ in range(3)]
    assert len(child) == 3
    assert not set(child) & set(parent)
    assert child[0][:16] != parent[0][:16]  # a new random prefix, not just a new count
