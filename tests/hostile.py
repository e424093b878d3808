"""Writing into a store behind duetime's back, as a hostile or broken program would."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Protocol

import psycopg
import redis
import redis.cluster
import redis.sentinel

from duetime.stores.postgres.config import parse_postgres_url
from duetime.stores.redis.keys import type_keys, wake_channel
from duetime.stores.redis.sentinel import parse_sentinel_url
from duetime.stores.redis.topology import parse_cluster_url
from duetime.stores.sqlite.config import parse_sqlite_url


class Raw(Protocol):
    """What the tests write into a store without duetime."""

    def add_due(self, task_type: str, task_id: str, due_ms: int, record: str) -> None:
        """Write a due task under any type name, valid or not, as another program would."""

    def set_record(self, task_type: str, task_id: str, value: bytes) -> None:
        """Overwrite the record of an existing task with these bytes."""

    def set_due(self, task_type: str, task_id: str, score: float) -> None:
        """Overwrite the due time of an existing due task."""

    def set_running(self, task_type: str, task_id: str, deadline: float, lease: bytes) -> None:
        """Give an existing task a running entry with this deadline and lease value."""

    def close(self) -> None: ...


def sync_redis(url: str) -> redis.Redis:
    """A blocking redis-py client for any Redis URL duetime takes (one server, the primary a
    Sentinel group names, or a cluster)."""
    scheme = url.partition("://")[0].lower()
    if scheme.endswith("+sentinel"):
        found = parse_sentinel_url(url)
        sentinel = redis.sentinel.Sentinel(list(found.sentinels))
        primary: redis.Redis = sentinel.master_for(
            found.service, db=found.db, password=found.password
        )
        return primary
    if scheme.endswith("+cluster"):
        nodes, options = parse_cluster_url(url)
        startup = [
            redis.cluster.ClusterNode(host, port)  # type: ignore[no-untyped-call]
            for host, port in nodes
        ]
        cluster = redis.cluster.RedisCluster(startup_nodes=startup, **options)
        return cluster  # type: ignore[return-value]  # duck-typed: single-slot commands
    return redis.Redis.from_url(url)


class RawRedis:
    def __init__(self, url: str, namespace: str) -> None:
        self.client = sync_redis(url)
        self.namespace = namespace

    def add_due(self, task_type: str, task_id: str, due_ms: int, record: str) -> None:
        keys = type_keys(self.namespace, task_type)
        self.client.hset(keys.data, task_id, record)
        self.client.zadd(keys.due, {task_id: due_ms})

    def set_record(self, task_type: str, task_id: str, value: bytes) -> None:
        self.client.hset(type_keys(self.namespace, task_type).data, task_id, value)

    def set_due(self, task_type: str, task_id: str, score: float) -> None:
        self.client.zadd(type_keys(self.namespace, task_type).due, {task_id: score})

    def set_running(self, task_type: str, task_id: str, deadline: float, lease: bytes) -> None:
        keys = type_keys(self.namespace, task_type)
        self.client.zadd(keys.running, {task_id: deadline})
        self.client.hset(keys.lease, task_id, lease)

    def publish_wake(self, data: bytes) -> int:
        return int(self.client.publish(wake_channel(self.namespace), data))

    def close(self) -> None:
        self.client.close()


class RawSqlite:
    def __init__(self, path: Path, namespace: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=10)
        self.namespace = namespace

    def _where(self, task_type: str) -> int:
        (qid,) = self.conn.execute(
            "SELECT qid FROM duetime_queues WHERE namespace = ? AND type = ?",
            (self.namespace, task_type),
        ).fetchone()
        return int(qid)

    def add_due(self, task_type: str, task_id: str, due_ms: int, record: str) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO duetime_queues (namespace, type) VALUES (?, ?)",
            (self.namespace, task_type),
        )
        self.conn.execute(
            "INSERT INTO duetime_tasks (qid, id, due_ms, record) VALUES (?, ?, ?, ?)",
            (self._where(task_type), task_id, due_ms, record),
        )

    def set_record(self, task_type: str, task_id: str, value: bytes) -> None:
        # Bytes as TEXT: SQLite stores them as they are, valid UTF-8 or not.
        self.conn.execute(
            "UPDATE duetime_tasks SET record = CAST(? AS TEXT) WHERE qid = ? AND id = ?",
            (value, self._where(task_type), task_id),
        )

    def set_due(self, task_type: str, task_id: str, score: float) -> None:
        self.conn.execute(
            "UPDATE duetime_tasks SET due_ms = ? WHERE qid = ? AND id = ?",
            (score, self._where(task_type), task_id),
        )

    def set_running(self, task_type: str, task_id: str, deadline: float, lease: bytes) -> None:
        self.conn.execute(
            "UPDATE duetime_tasks SET token = ?, claimed_due_ms = ?, deadline_ms = ?"
            " WHERE qid = ? AND id = ?",
            (lease, deadline, deadline, self._where(task_type), task_id),
        )

    def close(self) -> None:
        self.conn.close()


class RawPostgres:
    """Writes into the PostgreSQL store's tables. Its columns are typed: text is valid UTF-8
    without NUL, times and tokens are 64-bit integers. A value they cannot hold cannot be
    in the store, so it is left out (the task keeps what it had)."""

    def __init__(self, url: str, namespace: str) -> None:
        self.config = parse_postgres_url(url, namespace=namespace)
        self.conn: psycopg.Connection[Any] = psycopg.connect(
            self.config.conninfo,
            autocommit=True,
            options=f"-c search_path={self.config.schema}",
        )
        self.namespace = namespace

    def _set(self, task_type: str, task_id: str, assignments: str, *values: object) -> None:
        statement = (
            f"UPDATE tasks SET {assignments} WHERE qid = (SELECT qid FROM queues"
            " WHERE namespace = %s AND type = %s) AND id = %s"
        )
        self.conn.execute(statement.encode(), (*values, self.namespace, task_type, task_id))

    def add_due(self, task_type: str, task_id: str, due_ms: int, record: str) -> None:
        self.conn.execute(
            "INSERT INTO queues (namespace, type) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (self.namespace, task_type),
        )
        self.conn.execute(
            "INSERT INTO tasks (qid, id, due_ms, record) SELECT qid, %s, %s, %s FROM queues"
            " WHERE namespace = %s AND type = %s",
            (task_id, due_ms, record, self.namespace, task_type),
        )

    def set_record(self, task_type: str, task_id: str, value: bytes) -> None:
        try:
            text = value.decode()
        except UnicodeDecodeError:
            return
        if "\0" not in text:
            self._set(task_type, task_id, "record = %s", text)

    def force_record(self, task_type: str, task_id: str, value: bytes) -> None:
        """Write ``value`` as the record's text whatever it holds, as the bytes a client could
        send: the server checks the encoding and raises what it says."""
        self._set(task_type, task_id, "record = convert_from(%s, 'UTF8')", value)

    def set_due(self, task_type: str, task_id: str, score: float) -> None:
        if score == score and abs(score) < 2**63 - 1024:  # not NaN, and fits a bigint
            self._set(task_type, task_id, "due_ms = %s", int(score))

    def set_running(self, task_type: str, task_id: str, deadline: float, lease: bytes) -> None:
        try:
            token = int(lease)
        except ValueError:
            return
        if abs(token) < 2**63 and deadline == deadline and abs(deadline) < 2**63 - 1024:
            ms = int(deadline)
            self._set(
                task_type,
                task_id,
                "token = %s, claimed_due_ms = %s, deadline_ms = %s",
                token,
                ms,
                ms,
            )

    def publish_wake(self, data: bytes) -> None:
        try:
            payload = data.decode()
        except UnicodeDecodeError:
            return
        if "\0" not in payload:
            self.conn.execute("SELECT pg_notify(%s, %s)", (self.config.channel, payload))

    def close(self) -> None:
        self.conn.close()


def raw_for(store_url: str, namespace: str) -> Raw:
    """A raw writer into the store that ``store_url`` names."""
    if store_url.startswith("sqlite:"):
        return RawSqlite(parse_sqlite_url(store_url, namespace=namespace).path, namespace)
    if store_url.startswith(("postgresql:", "postgres:")):
        return RawPostgres(store_url, namespace)
    return RawRedis(store_url, namespace)
