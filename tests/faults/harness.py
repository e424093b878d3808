"""The fault tests' harness: worker processes started and signalled by pid, and the ledger.

Blocking helpers live here, in plain functions, so the async tests stay free of blocking
calls in their own bodies.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[2]
#: How long a worker process gets to log "worker started".
READY_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class Entry:
    """One ledger line."""

    kind: str  # "start" or "effect"
    task_id: str
    token: int
    attempt: int
    pid: int
    t_ms: float  # wall clock (CLOCK_REALTIME) when written
    due_ms: int  # ctx.due
    occurrence: str  # ctx.occurrence


def read_ledger(folder: Path) -> list[Entry]:
    """Every complete line of every ledger file in ``folder``, oldest first."""
    entries = []
    for path in sorted(folder.glob("ledger-*.log")):
        text = path.read_text()
        for line in text.splitlines(keepends=True):
            if not line.endswith("\n"):
                continue  # cut short by a kill mid-write (os.write makes this unlikely)
            kind, task_id, token, attempt, pid, t_ms, due_ms, occurrence = line.split()
            entries.append(
                Entry(
                    kind,
                    task_id,
                    int(token),
                    int(attempt),
                    int(pid),
                    float(t_ms),
                    int(due_ms),
                    occurrence,
                )
            )
    entries.sort(key=lambda e: e.t_ms)
    return entries


def by_task(entries: Iterable[Entry], kind: str) -> dict[str, list[Entry]]:
    out: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.kind == kind:
            out[entry.task_id].append(entry)
    return dict(out)


def counts(entries: Iterable[Entry], kind: str) -> Counter[str]:
    return Counter(e.task_id for e in entries if e.kind == kind)


class WorkerProcess:
    """One ``tests.faults.worker_app`` process, started, signalled and stopped by its pid.

    ``options`` are worker_app's flags (``mode="sleep:1"``, ``lease=1.0``, ``grace=2``,
    ``max_stalls=2``, ...); ``clock_offset`` runs it through ``skewed_worker``.
    """

    def __init__(
        self,
        workdir: Path,
        url: str,
        namespace: str,
        *,
        clock_offset: float | None = None,
        **options: object,
    ) -> None:
        self.workdir = workdir
        args = ["--url", url, "--namespace", namespace, "--ledger", str(workdir)]
        for name, value in options.items():
            args += ["--" + name.replace("_", "-"), str(value)]
        if clock_offset is None:
            self.cmd = [sys.executable, "-m", "tests.faults.worker_app", *args]
        else:
            wrapper = [sys.executable, "-m", "tests.faults.skewed_worker", str(clock_offset)]
            self.cmd = [*wrapper, *args]
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> WorkerProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")) if p
        )
        env["PYTHONUNBUFFERED"] = "1"
        n = len(list(self.workdir.glob("worker-*.err")))
        self.log_path = self.workdir / f"worker-{n}.err"
        with self.log_path.open("wb") as err:
            self.proc = subprocess.Popen(
                self.cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err
            )
        return self

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path and self.log_path.exists() else ""

    def log_has(self, text: str) -> bool:
        return text in self.log()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> WorkerProcess:
        deadline = time.monotonic() + timeout
        while "worker started" not in self.log():
            if not self.alive():
                raise AssertionError(f"worker {self.pid} exited early:\n{self.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {self.pid} not ready in {timeout} s:\n{self.log()}")
            time.sleep(0.01)
        return self

    def signal(self, signum: int) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signum)

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        self.signal(signal.SIGKILL)
        self.wait_exit(10)

    def wait_exit(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` s for the process to end; its exit code, or None."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class Workers:
    """The worker processes of one test; every one still alive is SIGKILLed at teardown."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.started: list[WorkerProcess] = []

    def start(
        self, url: str, namespace: str, *, clock_offset: float | None = None, **options: object
    ) -> WorkerProcess:
        worker = WorkerProcess(self.workdir, url, namespace, clock_offset=clock_offset, **options)
        self.started.append(worker)
        return worker.start()

    def ledger(self) -> list[Entry]:
        return read_ledger(self.workdir)

    def logs(self) -> str:
        return "\n".join(f"--- worker {w.pid} ---\n{w.log()}" for w in self.started)

    def dump_tasks(self) -> None:
        """Ask every live, running worker to log its asyncio tasks' stacks (SIGUSR1)."""
        asked = [w for w in self.started if w.alive() and w.log_has("worker started")]
        for worker in asked:
            worker.signal(signal.SIGUSR1)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and not all(
            w.log_has("--- asyncio tasks") or not w.alive() for w in asked
        ):
            time.sleep(0.02)

    def cleanup(self) -> None:
        for worker in self.started:
            worker.cleanup()


def redis_time_ms(client: redis.Redis) -> float:
    seconds, micros = client.time()
    return seconds * 1000 + micros / 1000


def wall_ms() -> float:
    return time.clock_gettime_ns(time.CLOCK_REALTIME) / 1e6


class ReplyDropProxy:
    """A TCP proxy in front of Redis that can lose a reply, as a network that drops one.

    ``drop_next(marker, hold)``: the next chunk the server sends (to any client of the
    proxy) that contains ``marker`` (any chunk for b"") is swallowed, with everything after
    it on that connection; ``hold`` seconds later the connection is cut, so the client sees
    its call fail after the server carried it out: the "unknown outcome" of reliability.md
    E-b and F10. The proxy runs its own event loop in a thread, so the tests' blocking
    helpers do not stall it.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = 0
        self.dropped = 0
        self._marker: bytes | None = None
        self._hold = 0.0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> ReplyDropProxy:
        self._thread.start()

        async def listen() -> int:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
            return int(self._server.sockets[0].getsockname()[1])

        self.port = asyncio.run_coroutine_threadsafe(listen(), self._loop).result(5)
        return self

    def drop_next(self, marker: bytes = b"", hold: float = 0.5) -> None:
        def arm() -> None:
            self._marker, self._hold = marker, hold

        self._loop.call_soon_threadsafe(arm)

    def close(self) -> None:
        async def shut() -> None:
            # Connections first: since Python 3.12, wait_closed() waits for every one.
            for writer in list(self._writers):
                writer.close()
            if self._server is not None:
                self._server.close()
                await self._server.wait_closed()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        self._loop.close()

    async def _serve(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        u_reader, u_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._writers |= {c_writer, u_writer}
        lost = False  # this connection's replies go nowhere until it is cut

        def cut() -> None:
            c_writer.close()
            u_writer.close()
            self._writers -= {c_writer, u_writer}

        async def pump(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter, replies: bool
        ) -> None:
            nonlocal lost
            try:
                while data := await reader.read(65536):
                    marker = self._marker
                    if replies and not lost and marker is not None and marker in data:
                        self._marker = None
                        self.dropped += 1
                        lost = True
                        asyncio.get_running_loop().call_later(self._hold, cut)
                    if replies and lost:
                        continue
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                if not lost:
                    cut()

        await asyncio.gather(pump(c_reader, u_writer, False), pump(u_reader, c_writer, True))
