"""The PostgreSQL the tests use: the server on 127.0.0.1:5432 (user postgres, trust auth),
each test in a schema of its own with a random name, dropped at the end.

``make install`` runs scripts/ensure-postgres, which starts the server if it can.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

SERVER = "postgresql://postgres@127.0.0.1:5432"
#: The database the contract tests make their schemas in (created if missing).
DATABASE = "test"


def admin(database: str = "postgres") -> psycopg.Connection[Any]:
    """An autocommit connection to ``database``; fails the test, saying what to do, when the
    server does not answer."""
    try:
        return psycopg.connect(f"{SERVER}/{database}", autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        problem = " ".join(str(exc).split())
    pytest.fail(
        f"PostgreSQL does not answer at {SERVER}/{database} ({problem}); the PostgreSQL tests "
        "need it (user postgres, trust authentication for 127.0.0.1): run "
        "scripts/ensure-postgres (make install does), or start it yourself",
        pytrace=False,
    )


def ensure_database(name: str = DATABASE) -> None:
    with admin() as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if found is None:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            except psycopg.errors.DuplicateDatabase:
                pass  # created by another test process meanwhile


@contextmanager
def fresh_schema(database: str = DATABASE) -> Iterator[str]:
    """The URL of a schema with a random name (not created: the store creates it); the
    schema is dropped at the end, with every connection still using it ended first."""
    ensure_database(database)
    schema = "t_" + uuid.uuid4().hex[:12]
    try:
        yield f"{SERVER}/{database}?schema={schema}"
    finally:
        with admin(database) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


class PrivateCluster:
    """A throwaway PostgreSQL cluster of the test's own (initdb in a temporary directory, a
    free port), which a test may stop, kill and restart: the machine's shared server is
    never restarted. Run as the ``postgres`` user when the tests run as root (PostgreSQL
    refuses to run as root).
    """

    def __init__(self, folder: Path, port: int) -> None:
        self.folder = folder
        self.data = folder / "data"
        self.port = port
        self.bindir = _bindir()
        self.log = folder / "server.log"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=60)

    def create(self) -> PrivateCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync")
        self.start()
        return self

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-w",
                  "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server: ``fast`` (ends sessions, checkpoints) or ``immediate`` (as a
        crash: no checkpoint, WAL replay at the next start)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def cleanup(self) -> None:
        if self.data.exists():
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


def _bindir() -> Path:
    """Where initdb and pg_ctl are: pg_config's bindir, else the PATH."""
    try:
        found = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        found = ""
    for folder in (found, *(os.environ.get("PATH", "").split(os.pathsep))):
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    raise FileNotFoundError("initdb and pg_ctl")


def private_cluster_problem() -> str:
    """Why a private cluster cannot be made here, or "" when it can."""
    try:
        _bindir()
    except FileNotFoundError:
        return "PostgreSQL's initdb and pg_ctl are not installed (pg_config --bindir, PATH)"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root without runuser, and PostgreSQL refuses to run as root"
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run a cluster as"
    return ""
