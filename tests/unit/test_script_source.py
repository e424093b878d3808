"""A Redis script's source (stores/redis/assemble.py): the shared definitions it uses, in
their order, and none of the others."""

from __future__ import annotations

import re
from importlib import resources

from duetime.stores.redis.assemble import assemble, definitions
from duetime.stores.redis.scripts import NAMES, SCRIPTS, includes, own_text

LUA = resources.files("duetime.stores.redis") / "lua"
SHARED = ("_preamble.lua", "_gate.lua", "_lanes.lua", "_groups.lua")


def test_each_top_level_definition_of_a_shared_file_is_found_in_order() -> None:
    for part in SHARED:
        text = (LUA / part).read_text()
        declared = re.findall(r"^local\s+(?:function\s+)?([A-Za-z_]\w*)", text, re.M)
        found = definitions(text)
        assert [name for name, _, _ in found] == declared, part
        # Every line from the first definition's comments on belongs to one definition.
        assert text.endswith("".join(code for _, code, _ in found)), part


def test_a_script_takes_what_it_names_and_what_that_names() -> None:
    shared = "local A = 1\n-- b, from A\nlocal function b()\n  return A\nend\nlocal C = 3\n"
    assert assemble([shared], "return b()") == (
        "local A = 1\n-- b, from A\nlocal function b()\n  return A\nend\nreturn b()"
    )
    assert assemble([shared], "return 1 -- not b") == "return 1 -- not b"


def test_every_script_defines_each_shared_name_it_uses_before_its_own_code() -> None:
    for name in NAMES:
        parts = ("_preamble.lua", *includes(own_text(name)))
        shared = {d for part in parts for d, _, _ in definitions((LUA / part).read_text())}
        source = SCRIPTS[name].source
        own = (LUA / f"{name}.lua").read_text()
        assert source.endswith(own)
        defined = set(re.findall(r"^local\s+(?:function\s+)?([A-Za-z_]\w*)", source, re.M))
        used = set(re.findall(r"[A-Za-z_]\w*", re.sub(r"--[^\n]*", "", source)))
        assert used & shared <= defined, name
    schedule = SCRIPTS["schedule"].source
    assert "local function wrong_type" in schedule
    assert "local function group_claim" not in schedule  # the claim's, not a schedule's
