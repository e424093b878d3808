"""What a process loads: ``import duetime`` and a worker running tasks load neither the
reading side (the dashboard's history, the run history's reading, the HTTP endpoint) nor a
store's driver they do not use (a Redis worker not even redis-py), so that a worker, a CLI
command and an app start quickly; and each name imported on first use is there when asked
for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Modules a worker of one-off tasks never needs: each loads when its feature is first used.
NOT_LOADED = (
    "duetime.probes.endpoint",  # served only with metrics_port or health_port
    "duetime.features.telemetry.history",  # reading the per-minute counts back
    "duetime.features.history.runs",  # reading the run history back
    "duetime.features.cron.manage",
    "duetime.features.pollers.poller",
    "duetime.interval",  # calendar intervals
    "duetime.triggers.periodic",
    "duetime.rate",
    "duetime.sync",
    "duetime.web",
    "duetime.cli",
    # Of the standard library: zoneinfo with the first trigger that reads a zone; secrets
    # (and the hmac and hashlib it loads) nowhere, ids are drawn from os.urandom.
    "zoneinfo",
    "secrets",
)

WORKER = """
import asyncio, json, sys
import duetime

async def main(url):
    app = duetime.App(url)
    ran = []

    @app.task("mail")
    async def mail(payload):
        ran.append(payload)

    async with app:
        await app.schedule("mail", "a", payload={"to": "x"})
        await app.serve(burst=True)
    assert ran == [{"to": "x"}], ran
    print(json.dumps(sorted(sys.modules)))

asyncio.run(main(sys.argv[1]))
"""


#: A worker with every feature a Redis worker's own path serves: a named cron schedule (its
#: name kept in the namespace's index), an expiring group and a poller, and a paused type
#: (the namespace's index of gates).
FULL_WORKER = """
import asyncio, json, sys
from datetime import timedelta
import duetime

async def main(url):
    app = duetime.App(url)
    ran = []

    @app.task("mail")
    async def mail(payload):
        ran.append(payload)

    @app.cron("0 0 1 1 *", name="yearly")
    async def yearly(ctx):
        pass

    cache = app.expiring("pending", ttl=timedelta(minutes=5))

    @cache.on_expire
    async def flush(key, value):
        pass

    @app.poller("find", concurrency=1)
    async def find(ctx):
        return []

    async with app:
        await cache.put("k", 1)
        await app.schedule("mail", "a", payload={"to": "x"})
        await app.serve(burst=True)
        assert "yearly" in {c.name for c in await app.crons()}
    assert ran == [{"to": "x"}], ran
    print(json.dumps(sorted(sys.modules)))

asyncio.run(main(sys.argv[1]))
"""


def _loaded(code: str, *args: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_import_duetime_loads_no_feature_it_does_not_use_and_no_store_driver() -> None:
    loaded = _loaded("import duetime, json, sys; print(json.dumps(sorted(sys.modules)))")
    assert not loaded & {*NOT_LOADED, "redis", "psycopg", "aiosqlite", "sqlite3"}


def test_a_worker_running_tasks_loads_no_feature_it_does_not_use(tmp_path: Path) -> None:
    loaded = _loaded(WORKER, f"sqlite:///{tmp_path / 'duetime.db'}")
    assert "duetime.worker.hot" in loaded  # it did run, through the hot path
    # Nor importlib.resources (and the tempfile, zipfile and email it brings): the store's
    # SQL and migrations are read from the package's folder on disk.
    assert not loaded & {*NOT_LOADED, "redis", "psycopg", "importlib.resources", "zipfile"}


def test_a_redis_worker_loads_no_redis_py(redis_url: str) -> None:
    """On one server, a worker's whole path (scripts, clock, checks, wake-ups) goes through
    duetime's own client: redis-py (some 50 ms of a start) loads only for the listings and
    tools."""
    loaded = _loaded(WORKER, redis_url)
    assert "duetime.worker.hot" in loaded
    assert "duetime.stores.redis.resp.client" in loaded
    assert not loaded & {*NOT_LOADED, "redis", "psycopg", "importlib.resources"}


def test_a_redis_worker_with_crons_expiring_groups_and_pollers_loads_no_redis_py(
    redis_url: str,
) -> None:
    """The cron names' index, the gates' and the listings go through duetime's own client
    too: redis-py loads only for a Cluster."""
    loaded = _loaded(FULL_WORKER, redis_url)
    assert "duetime.features.cron.manage" in loaded  # the features did load
    assert "duetime.features.pollers.poller" in loaded
    assert "redis" not in loaded


#: The CLI's reads and writes of the tools, run in one process.
CLI = """
import json, sys
from click.testing import CliRunner
from duetime.cli import main

where = ["--url", sys.argv[1], "--namespace", sys.argv[2]]
runner = CliRunner()
for args in (
    ["schedule", *where, "mail", "a", "--payload", "{}"],
    ["ls", *where, "mail"],
    ["stats", *where],
    ["pause", *where, "mail"],
    ["resume", *where, "mail"],
    ["cron", *where],
    ["history", *where, "mail"],
):
    result = runner.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, (args, result.output)
print(json.dumps(sorted(sys.modules)))
"""


def test_the_cli_on_one_redis_server_loads_no_redis_py(redis_url: str, namespace: str) -> None:
    """The listings, counts, gates, cron index and history the tools read go through
    duetime's own client."""
    loaded = _loaded(CLI, redis_url, namespace)
    assert "duetime.cli" in loaded
    assert "redis" not in loaded


def test_each_name_imported_on_first_use_is_there() -> None:
    code = (
        "import duetime, duetime.features.telemetry as t, json, sys\n"
        "names = [getattr(duetime, n) for n in duetime.__all__]\n"
        "names += [getattr(t, n) for n in t.__all__]\n"
        "print(json.dumps([n.__name__ for n in names if hasattr(n, '__name__')]))\n"
    )
    got = _loaded(code)
    assert {"CalendarInterval", "Rate", "SyncClient", "TypeHistory", "read_history"} <= got


#: The most of duetime's own modules ``import duetime`` may load (67 when this bound was
#: set, down from 90; the standard library's and msgspec's brought the total from 234 to
#: 208): what a producer needs (the App and its calls, the registry, the store seam), not
#: the worker, its heartbeat and counters, nor the reading side of telemetry. This round's
#: features brought it to 76 (the transaction seam, results, middleware and metadata, the
#: loop-following lock, the in-store merge, the probes package): the bound holds it there
#: until those are imported on first use too.
MAX_DUETIME_MODULES_ON_IMPORT = 76

#: What a producer never runs, loaded when a worker is made or a listing is read.
PRODUCER_NOT_LOADED = (
    "duetime.worker",  # duetime.Worker and app.worker() import it
    "duetime.worker.worker",
    "duetime.worker.runner",
    "duetime.features.telemetry.heartbeat",
    "duetime.features.telemetry.counting",
    "duetime.features.telemetry.presence",  # app.workers() reads it back
)


def test_import_duetime_loads_a_bounded_number_of_its_modules_and_no_worker() -> None:
    loaded = _loaded("import duetime, json, sys; print(json.dumps(sorted(sys.modules)))")
    own = sorted(m for m in loaded if m == "duetime" or m.startswith("duetime."))
    assert len(own) <= MAX_DUETIME_MODULES_ON_IMPORT, own
    assert not loaded & set(PRODUCER_NOT_LOADED)
    worker = _loaded(
        "import duetime, json, sys; duetime.Worker; print(json.dumps(sorted(sys.modules)))"
    )
    assert {"duetime.worker.worker", "duetime.worker.runner"} <= worker  # there when asked
