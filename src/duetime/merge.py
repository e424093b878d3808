"""Deep merge of payloads, the rule periodic reschedules use."""

from __future__ import annotations

import copy
from typing import Any

# Keys the source design's JavaScript merge skips, to keep prototype pollution out. They
# mean nothing in Python, but skipping them keeps payloads shared with JS code consistent.
_UNSAFE_KEYS = frozenset({"__proto__", "constructor", "prototype"})


def deep_merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Return a new dict: ``base`` with ``changes`` merged in.

    Nested dicts merge key by key; anything else in ``changes`` (lists included) replaces
    what ``base`` held. Neither argument is modified, and the result shares nothing with
    them.
    """
    out = {key: copy.deepcopy(value) for key, value in base.items()}
    for key, value in changes.items():
        if key in _UNSAFE_KEYS:
            continue
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = deep_merge(old, value)
        else:
            out[key] = copy.deepcopy(value)
    return out
