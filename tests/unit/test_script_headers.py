"""Each Redis script's header declares what it reads: its includes, its KEYS and its ARGV
(the call sites are held to the same header through the contract suite:
tests/scripts_arity.py)."""

from __future__ import annotations

import re

import pytest

from duetime.stores.packaged import folder
from duetime.stores.redis import scripts
from tests.scripts_arity import problem


@pytest.mark.parametrize("name", scripts.NAMES)
def test_a_script_reads_no_key_or_argument_its_header_does_not_declare(name: str) -> None:
    own = scripts.own_text(name)
    declared = scripts.arity(own)
    body = re.sub(r"--[^\n]*", "", own)
    keys = [int(n) for n in re.findall(r"KEYS\[(\d+)\]", body)]
    args = [int(n) for n in re.findall(r"ARGV\[(\d+)\]", body)]
    if declared.keys[1] is not None:
        assert max(keys, default=0) <= declared.keys[1], name
    if declared.argv[1] is not None:
        assert max(args, default=0) <= declared.argv[1], name


@pytest.mark.parametrize("name", scripts.NAMES)
def test_a_script_names_the_shared_files_it_includes_on_its_include_line(name: str) -> None:
    own = scripts.own_text(name)
    for part in scripts.includes(own):
        assert (folder("duetime.stores.redis", "lua") / part).is_file(), part
    assert own.count("-- include") <= 1


def test_a_call_is_held_to_its_header() -> None:
    assert problem("hold", ["gate"], [5]) is None
    assert problem("hold", ["gate"], []) == "hold: 0 arguments, its header declares 1 to 1"
    assert problem("pause", [], [1, 2, 3, 4]) == "pause: 0 keys, its header declares 1 to 1"
    assert problem("schedule", ["k"] * 10, [0] * 7) is None  # its call marker left out
    assert problem("add_counts", ["m1", "m2"], [60_000, 0, 1, "f", 1]) is None
