"""Throwaway redis-server processes for tests, each on a free port, stopped by pid."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_binary() -> str:
    path = shutil.which("redis-server")
    if path is None:
        raise RuntimeError(
            "redis-server is not on the PATH: the tests start their own Redis. Install it "
            "(Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis), "
            "or run `make test`, which installs it when it can."
        )
    return path


class RedisServer:
    """A redis-server this test session started; it is never the machine's shared one."""

    def __init__(self, *args: str, port: int | None = None) -> None:
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"duetime-redis-{self.port}-"))
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        cmd = [
            redis_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.dir),
            "--save",
            "",
            "--appendonly",
            "no",
            "--enable-debug-command",
            "local",
            *self.args,
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    client.ping()
                    # Loading an AOF: PING answers before the data is there.
                    while client.info("persistence").get("loading"):
                        time.sleep(0.01)
                    return self
                except (redis.ConnectionError, redis.BusyLoadingError) as exc:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"redis-server on port {self.port} did not start"
                        ) from exc
                    time.sleep(0.02)
        finally:
            client.close()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True)

    def kill(self) -> None:
        """SIGKILL: the process dies at once, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> None:
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
