"""Fuzz: arbitrary bytes, arbitrary JSON and boundary numbers written into the store beside
good tasks, on every store. The good tasks run exactly once, the worker stays up, each bad
task ends in the dead letters or is reported in the listings, and the CLI still prints.

Each example writes dozens of bad values at once, so a few examples cover a few hundred.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import duetime
from duetime.cli import main
from duetime.clock import MAX_MS, MIN_MS
from tests.helpers import eventually, running
from tests.hostile import RawPostgres, RawRedis, RawSqlite, raw_for

GOOD = 8
#: The bad records whose `duetime show` each example runs (and two bad due times).
SHOWN = 3

BOUNDARY = st.sampled_from(
    [0, -1, 1, 0.5, -0.5, MAX_MS, MAX_MS + 1, MIN_MS, MIN_MS - 1, 2**63, -(2**63), 2**64, 1e300,
     -1e300, 99999999999999999999, float("inf"), float("-inf")]
)  # fmt: skip
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | BOUNDARY,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=6,
)
CRON = st.fixed_dictionaries(
    {
        "x": st.sampled_from(["* * * * *", "*/5 * * * * *", "61 * * * *", "", "@yearly"]),
        "z": st.sampled_from(["UTC", "Europe/Madrid", "Nowhere/City", ""]),
    },
    optional=dict.fromkeys(("m", "v", "j", "w", "q", "nm", "ns"), BOUNDARY | JSON_VALUES),
)


def _dumps(doc: object) -> bytes:
    return json.dumps(doc).encode()


RECORDS = st.one_of(
    st.binary(max_size=40),  # bytes: UTF-8 or not, JSON or not
    JSON_VALUES.map(_dumps),  # JSON of any shape
    st.builds(
        lambda payload, fields: _dumps({"p": payload, **fields}),
        JSON_VALUES,
        st.dictionaries(st.sampled_from(["e", "u", "o", "f"]), BOUNDARY | JSON_VALUES, max_size=3),
    ),
    st.builds(lambda c, o: _dumps({"p": {}, "c": c, "o": o}), CRON, BOUNDARY),
    st.sampled_from([b'{"p":{"x":"\\ud800"}}', b'{"p":{"\\udcff":1}}', b'{"p":{}}']),
)
DUES = BOUNDARY.map(float)
WAKES = st.binary(max_size=16) | st.sampled_from([b"\xff", b"work \xff", b"work x", b"* 1"])


@pytest.mark.slow
# 40 examples of up to 56 bad values each: a thousand a store, new ones each run. About 1 to
# 2 s an example (a worker's start and stop, the CLI), 30-80 s a store, more when loaded: 100
# examples took 470 s on a cluster on a loaded machine, the whole contract suite's longest.
@pytest.mark.timeout(480)
@settings(
    max_examples=40,
    deadline=None,
    # Each example runs a worker for seconds: no shrinking, so that the run stays bounded.
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    records=st.lists(RECORDS, min_size=1, max_size=40),
    dues=st.lists(DUES, max_size=10),
    runnings=st.lists(st.tuples(DUES, st.binary(max_size=12)), max_size=6),
    wakes=st.lists(WAKES, max_size=6),
)
def test_bad_values_in_the_store_never_stop_good_work(
    store_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    records: list[bytes],
    dues: list[float],
    runnings: list[tuple[float, bytes]],
    wakes: list[bytes],
) -> None:
    namespace = "f" + uuid.uuid4().hex[:12]
    ran = asyncio.run(_scenario(store_url, namespace, records, dues, runnings, wakes))
    assert sorted(t for t in ran if t.startswith("g")) == [f"g{i}" for i in range(GOOD)]
    _listings_print(store_url, namespace, tmp_path, monkeypatch, len(records), len(dues))


async def _scenario(
    url: str,
    namespace: str,
    records: list[bytes],
    dues: list[float],
    runnings: list[tuple[float, bytes]],
    wakes: list[bytes],
) -> list[str]:
    app = duetime.App(url, namespace=namespace)
    ran: list[str] = []

    @app.task("work", lease=2, retries=0, concurrency=8)
    async def work(payload: Any, ctx: duetime.Context) -> None:
        ran.append(ctx.task_id)

    bad = [f"r{i}" for i in range(len(records))] + [f"d{i}" for i in range(len(dues))]
    bad += [f"u{i}" for i in range(len(runnings))]
    good = [f"g{i}" for i in range(GOOD)]
    await app.schedule_many(duetime.Task("work", task_id) for task_id in [*good, *bad])
    raw = raw_for(url, namespace)
    try:
        for i, value in enumerate(records):
            raw.set_record("work", f"r{i}", value)
        for i, score in enumerate(dues):
            raw.set_due("work", f"d{i}", score)
        for i, (deadline, lease) in enumerate(runnings):  # due, and a run that is not
            raw.set_running("work", f"u{i}", deadline, lease)

        async def accounted() -> bool:
            for task_id in bad:
                info = await app.get("work", task_id)
                if not (task_id in ran or _reported(info)):
                    return False
            return True

        async with running(app) as worker:
            for message in wakes:
                _wake(raw, message)
            await eventually(lambda: set(good) <= set(ran), 15, "every good task ran")
            await eventually(accounted, 15, "every bad task ran, is dead or is reported")
            assert worker.started.is_set()
    finally:
        raw.close()
        await app.close()
    return ran


def _reported(info: duetime.TaskInfo | None) -> bool:
    """A bad task is accounted for: dead with the reason, shown with what is wrong, or due
    at a time still to come (a boundary that is a valid time, the year 9999 say)."""
    if info is None:
        return False  # it would have to have run (and then be in `ran`)
    if info.state == "dead":
        return bool(info.error)
    if info.state != "due":
        return False
    if info.due is None:
        return bool(info.error)
    return info.due > datetime.now(UTC) + timedelta(days=1)


def _wake(raw: object, message: bytes) -> None:
    if isinstance(raw, RawRedis | RawPostgres):
        raw.publish_wake(message)
    elif isinstance(raw, RawSqlite):
        raw.conn.execute(
            "UPDATE duetime_queues SET wake_serial = wake_serial + 1, wake_due_ms = ?"
            " WHERE namespace = ?",
            (message, raw.namespace),
        )


CLI_APP = """
import os, duetime
app = duetime.App(os.environ["FUZZ_URL"], namespace=os.environ["FUZZ_NS"])
app.declare("work")
"""


def _listings_print(
    url: str,
    namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    n_records: int,
    n_dues: int,
) -> None:
    (tmp_path / "fuzzapp.py").write_text(CLI_APP)
    with monkeypatch.context() as env:
        env.setenv("FUZZ_URL", url)
        env.setenv("FUZZ_NS", namespace)
        env.chdir(tmp_path)
        sys.modules.pop("fuzzapp", None)
        runner = CliRunner()
        for state in ("due", "running", "dead"):
            result = runner.invoke(main, ["ls", "fuzzapp:app", "work", "--state", state])
            assert result.exit_code == 0 and result.exception is None, result.output
        # A few of the bad tasks: each `show` opens the store anew (a quarter of a second on
        # a cluster, most of an example's time), and the scenario's accounting read every
        # bad task already, through the same calls; this is the CLI's printing of them.
        ids = [f"r{i}" for i in range(n_records)][:SHOWN] + [f"d{i}" for i in range(n_dues)][:2]
        for task_id in ids:
            result = runner.invoke(main, ["show", "fuzzapp:app", "work", task_id])
            assert result.exit_code in (0, 3), result.output  # 3: it ran and is gone
            assert not isinstance(result.exception, Exception) or result.exit_code == 1, (
                result.exception
            )
        assert os.environ["FUZZ_NS"] == namespace
