"""Run ``worker_app`` with a wrong wall clock.

    python -m tests.faults.skewed_worker <offset seconds> <worker_app arguments>

``time.time`` and ``time.time_ns`` are shifted by the offset before duetime (or anything
else) is imported, as on a machine whose clock is off. The monotonic clock and
``CLOCK_REALTIME`` read through ``time.clock_gettime`` are left alone: the first is not a
wall clock, and the ledger uses the second to stay comparable with Redis ``TIME``.
"""

from __future__ import annotations

import runpy
import sys
import time

_real_time = time.time
_real_time_ns = time.time_ns


def _install(offset_s: float) -> None:
    offset_ns = int(offset_s * 1e9)
    time.time = lambda: _real_time() + offset_s
    time.time_ns = lambda: _real_time_ns() + offset_ns


if __name__ == "__main__":
    _install(float(sys.argv[1]))
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    runpy.run_module("tests.faults.worker_app", run_name="__main__", alter_sys=True)
