"""Bad input for App.schedule, each with the field its error must name: used by the store-free
unit tests and by the contract suite (which checks that nothing is written)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

AT = datetime(2031, 5, 4, 9, 30, tzinfo=UTC)
DEEP: Any = 1
for _ in range(40):
    DEEP = [DEEP]

BAD_SCHEDULES: list[tuple[str, dict[str, Any], str]] = [
    ("empty id", {"task_id": ""}, "task_id"),
    ("oversized id", {"task_id": "x" * 201}, "task_id"),
    ("id with a newline", {"task_id": "a\nb"}, "task_id"),
    ("id not a string", {"task_id": 12}, "task_id"),
    ("id ending like an occurrence id", {"task_id": "daily@123"}, "task_id"),
    ("id ending like an occurrence id before 1970", {"task_id": "daily@-123"}, "task_id"),
    ("naive at", {"at": datetime(2031, 5, 4, 9, 30)}, "at"),
    ("at is a string", {"at": "2031-05-04"}, "at"),
    ("at and delay", {"at": AT, "delay": timedelta(seconds=1)}, "at"),
    ("negative delay", {"at": None, "delay": timedelta(seconds=-1)}, "delay"),
    ("payload a list", {"payload": [1, 2]}, "payload"),
    ("payload a string", {"payload": "{}"}, "payload"),
    ("payload with an int key", {"payload": {1: "x"}}, "payload"),
    ("payload with NaN", {"payload": {"x": math.nan}}, "payload"),
    ("payload with a set", {"payload": {"x": {1, 2}}}, "payload"),
    ("payload with a datetime", {"payload": {"when": AT}}, "payload"),
    ("payload too big", {"payload": {"blob": "x" * 70_000}}, "payload"),
    ("payload too deep", {"payload": {"a": DEEP}}, "payload"),
    ("every zero", {"every": timedelta(0)}, "every"),
    ("every negative", {"every": timedelta(days=-1)}, "every"),
    ("every a string", {"every": "weekly"}, "every"),
    ("until without every", {"until": AT + timedelta(days=1)}, "until"),
    ("until before at", {"every": timedelta(days=1), "until": AT - timedelta(days=1)}, "until"),
    ("naive until", {"every": timedelta(days=1), "until": datetime(2032, 1, 1)}, "until"),
]
