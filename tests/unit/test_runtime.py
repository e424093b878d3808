"""The worker runtime's garbage-collector tuning, in a fresh interpreter (it is process-wide)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import gc
from duetime.worker.runtime import tune_gc

gc.set_threshold(50_000, 10, 10)    # a process that asked for more keeps it
tune_gc()
print(gc.get_threshold()[0], gc.get_freeze_count() > 0)
gc.set_threshold(0)                 # a process that turned collection off keeps it off
tune_gc()
print(gc.get_threshold()[0])
gc.set_threshold(700, 10, 10)
tune_gc()
print(gc.get_threshold())
"""


def test_tune_gc_freezes_and_only_raises_the_young_threshold() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:3] == ["50000 True", "0", "(10000, 10, 10)"]
