"""A script's source: its own file after the shared definitions it uses, and no others.

The shared files (``_preamble.lua`` and the includes a script names) define local
functions and constants, each at the top level, starting ``local`` at the start of a line
(with the comment lines just above it). Redis runs a script's whole chunk on every call,
so every definition it carries is made again on every call: a closure per function. The
preamble and the includes hold some fifty; a script that uses ten would pay for fifty on
each call, about 10 µs of the server's time, which is a third of a one-task schedule.
So a script takes the definitions its own code names, and those they name in turn.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

#: A top-level definition's first line: ``local function name`` or ``local NAME =``.
_DEFINES = re.compile(r"^local\s+(?:function\s+)?([A-Za-z_][A-Za-z0-9_]*)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Lua comments: what a definition says, not what it uses.
_COMMENT = re.compile(r"--[^\n]*")


@functools.cache
def definitions(text: str) -> tuple[tuple[str, str, frozenset[str]], ...]:
    """The top-level definitions of a shared file, in order: (name, text with the comment
    lines just above it, the names its code uses), found once per file. Text before the
    first definition (the file's header) is left out; a shared file holds nothing else at
    the top level."""
    found: list[tuple[str, str]] = []
    lines = text.splitlines(keepends=True)
    name, start = None, 0  # the current definition, and where its text (comments first) begins
    comments_from = None
    for i, line in enumerate(lines):
        match = _DEFINES.match(line)
        if match:
            begin = comments_from if comments_from is not None else i
            if name is not None:
                found.append((name, "".join(lines[start:begin])))
            name, start = match[1], begin
            comments_from = None
        elif line.startswith("--"):
            if comments_from is None:
                comments_from = i
        elif line.strip():
            comments_from = None  # a definition's own lines, or its end
    if name is not None:
        found.append((name, "".join(lines[start:])))
    return tuple((name, code, frozenset(_names(code))) for name, code in found)


def _names(code: str) -> set[str]:
    return set(_WORD.findall(_COMMENT.sub("", code)))


def assemble(shared: Sequence[str], script: str) -> str:
    """The source Redis runs: the definitions of ``shared`` (the files' texts, in order)
    that ``script`` needs, directly or through each other, then ``script``."""
    defs = [d for text in shared for d in definitions(text)]
    uses = {name: used for name, _, used in defs}
    needed: set[str] = set()
    todo = [n for n in _names(script) if n in uses]
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += (n for n in uses[name] if n in uses and n not in needed)
    kept = [code for name, code, _ in defs if name in needed]
    return "".join(kept) + ("\n" if kept and not kept[-1].endswith("\n") else "") + script
