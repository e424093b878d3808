"""bench/ab.py's counts: what a process executes, and what Redis spends, per call or task.

Rates and CPU times move with whatever else the machine does. Two counts move far less:

- **Instructions**, counted by valgrind's callgrind (a CPU simulated instruction by
  instruction: the same binary on the same input executes the same count, whatever the
  other core is doing). A process is counted at two sizes of the same workload, and the
  difference divided by the difference in size is its cost per call or task, without its
  start (the interpreter, the imports, connecting) and its end. Only the process's own
  user-space work is counted, not the kernel's (the socket calls) nor the server's.
- **The Redis server's own time in duetime's scripts**, from its ``INFO commandstats``
  (the microseconds it spent in ``EVALSHA``, reset before the workload): what the store
  costs a call or a task, apart from the client's.

Under callgrind a Python process runs some fifty times slower, so the counted workloads
(W1i, W2i) are small, and timers fire more often per task than at full speed: the counts
carry a little of that, alike for both builds.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import redis

#: What callgrind prints at its end: the instructions it collected.
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")
_VALGRIND = re.compile(r"==\d+==")
#: The commands that run a script, as INFO commandstats names them.
_SCRIPT_CALLS = ("cmdstat_evalsha", "cmdstat_evalsha_ro", "cmdstat_eval", "cmdstat_eval_ro")


def valgrind() -> str:
    """valgrind's path, or a clear refusal."""
    path = shutil.which("valgrind")
    if path is None:
        raise SystemExit(
            "the counted workloads (w1i, w2i) need valgrind: install it "
            "(apt-get install -y valgrind) or leave them out of --workloads"
        )
    return path


def counting(cmd: list[str], out: Path) -> list[str]:
    """``cmd`` run under callgrind, its profile written to ``out`` (read, then removed, by
    :func:`collected`). Nothing is collected in the process's children."""
    return [valgrind(), "--tool=callgrind", f"--callgrind-out-file={out}", *cmd]


def quiet_env() -> dict[str, str]:
    """The environment of a counted process: string hashing fixed, so that two runs of one
    build hash alike (sets and dicts of text then iterate alike), and no per-task samples
    kept by bench/ab_agent.py's worker (their writing at the end grows with the tasks and
    would be counted as the worker's: a float's text costs thousands of instructions)."""
    return {**os.environ, "PYTHONHASHSEED": "0", "DUETIME_AB_SAMPLES": "0"}


def collected(stderr: str, out: Path) -> int:
    """The instructions a counted process executed, from what callgrind printed."""
    out.unlink(missing_ok=True)
    found = _COLLECTED.findall(stderr)
    if not found:
        raise SystemExit(f"callgrind printed no count:\n{stderr[-2000:]}")
    return int(found[-1])


def per_unit(count: Callable[[int], int], small: int, large: int) -> tuple[float, float]:
    """A workload counted at two sizes (``count(n)``: the instructions at size ``n``): its
    instructions per unit, and those of the rest (the process's start and end)."""
    at_small = count(small)
    each = (count(large) - at_small) / (large - small)
    return each, at_small - each * small


class ServerClock:
    """The Redis server's time in scripts, from zero at :meth:`reset`."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def reset(self) -> None:
        with self._client() as client:
            client.config_resetstat()

    def spent_us(self) -> float:
        """Microseconds the server spent running scripts since :meth:`reset` (every call
        duetime makes on a hot path is a script; a script's time includes the commands it
        calls, which the server also counts under their own names, so those are left out)."""
        with self._client() as client:
            stats = client.info("commandstats")
        return float(sum(stats[name]["usec"] for name in _SCRIPT_CALLS if name in stats))


def run_counted(cmd: list[str], out: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``cmd`` to its end under callgrind, its profile in ``out``: its outcome, and the
    instructions counted (0 when it failed)."""
    proc = subprocess.run(
        counting(cmd, out), capture_output=True, text=True, env=quiet_env(), check=False
    )
    return proc, collected(proc.stderr, out) if proc.returncode == 0 else 0


def own_lines(stderr: str) -> str:
    """What a counted process wrote itself, without valgrind's lines (``==pid== ...``)."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not _VALGRIND.match(line))
