"""bench/ab.py's counts: what a process executes, and what Redis spends, per call or task.

Rates and CPU times move with whatever else the machine does. Two counts move far less:

- **Instructions**, counted by valgrind's callgrind (a CPU simulated instruction by
  instruction: the same binary on the same input executes the same count, whatever the
  other core is doing). A process is counted at two sizes of the same workload, and the
  difference divided by the difference in size is its cost per call or task, without its
  start (the interpreter, the imports, connecting) and its end. Only the process's own
  user-space work is counted, not the kernel's (the socket calls) nor the server's.
- **The Redis server's instructions** (W2s): a redis-server of its own run under callgrind,
  its count zeroed after W2's seed and read after the worker's end, at two sizes.
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
import time
from collections.abc import Callable
from pathlib import Path

import redis

#: What callgrind prints at its end: the instructions it collected.
_COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")
#: The total of a dump of callgrind_control -d.
_TOTALS = re.compile(r"^(?:summary|totals):\s*(\d+)", re.MULTILINE)
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


class CountedRedis:
    """A redis-server of its own under callgrind (W2s): :meth:`zero` its count, and read
    it with :meth:`counted`. Some fifty times slower than at full speed, so that W2s's
    worker waits on it: the count is the server's alone, whatever the worker does."""

    def __init__(self, tmp: Path) -> None:
        from tests.servers import free_port, redis_binary

        self.port = free_port()
        self.out = tmp / "redis-server.callgrind"
        cmd = [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1"]
        cmd += ["--save", "", "--appendonly", "no", "--dir", str(tmp)]
        self.proc = subprocess.Popen(
            counting(cmd, self.out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with redis.Redis(port=self.port, socket_connect_timeout=1) as client:
                    client.ping()
                return
            except redis.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("redis-server under callgrind did not start") from None
                time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _control(self, option: str) -> None:
        subprocess.run(
            ["callgrind_control", option, str(self.proc.pid)], capture_output=True, check=True
        )

    def zero(self) -> None:
        """Count from now."""
        self._control("-z")

    def counted(self) -> int:
        """The instructions the server executed since :meth:`zero`."""
        self._control("-d")
        dumps = sorted(self.out.parent.glob(self.out.name + ".*"), key=lambda p: p.stat().st_mtime)
        text = dumps[-1].read_text()
        for dump in dumps:
            dump.unlink()
        found = _TOTALS.search(text)
        if found is None:
            raise SystemExit("callgrind's dump of redis-server holds no total")
        return int(found.group(1))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)
        for path in self.out.parent.glob(self.out.name + "*"):
            path.unlink()


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
