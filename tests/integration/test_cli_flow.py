"""``duetime pause`` and ``duetime resume`` on a store URL (no app code), and a paused type
as ``ls`` and ``stats`` show it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import duetime
from duetime.cli import main


@pytest.fixture(params=["redis", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param in ("redis", "postgres"):
        url: str = request.getfixturevalue(f"{request.param}_url")
        return url
    return f"sqlite:///{tmp_path / 'duetime.db'}"


@pytest.fixture
def target(store_url: str, namespace: str) -> list[str]:
    return ["--url", store_url, "--namespace", namespace]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["--log-level", "WARNING", *args])


async def seed(url: str, namespace: str) -> None:
    app = duetime.App(url, namespace=namespace)
    app.declare("mail")
    app.declare("spread", partitions=3)
    await app.schedule_many(duetime.Task("mail", f"m{i}") for i in range(2))
    await app.schedule_many(duetime.Task("spread", f"s{i}") for i in range(3))
    await app.close()


async def paused(url: str, namespace: str) -> set[str]:
    app = duetime.App(url, namespace=namespace)
    try:
        return await app.paused()
    finally:
        await app.close()


def test_pause_and_resume_a_type_by_its_store_url(
    store_url: str, namespace: str, target: list[str]
) -> None:
    asyncio.run(seed(store_url, namespace))

    result = invoke("pause", "mail", *target)
    assert result.exit_code == 0 and result.stdout == "mail paused\n", result.output
    assert invoke("pause", "mail", *target).stdout == "mail was paused already\n"
    assert json.loads(invoke("pause", "spread", *target, "--json").stdout) == {
        "type": "spread",
        "paused": True,
        "changed": True,
    }
    assert asyncio.run(paused(store_url, namespace)) == {"mail", "spread"}

    listed = invoke("ls", *target)
    assert listed.exit_code == 0, listed.output
    assert "mail\tm0\tdue (paused)\t" in listed.stdout
    assert "mail is paused" in listed.stderr and "spread is paused" in listed.stderr
    docs = json.loads(invoke("ls", "mail", *target, "--json").stdout)
    assert [d["paused"] for d in docs] == [True, True]
    rows = json.loads(invoke("stats", *target, "--json").stdout)
    assert {r["type"]: r["paused"] for r in rows} == {"mail": True, "spread": True}
    text = invoke("stats", *target).stdout.splitlines()
    assert text[0].endswith("\tp99_ms\tpaused") and text[1].endswith("\tpaused")

    assert invoke("resume", "mail", *target).stdout == "mail resumed\n"
    assert invoke("resume", "mail", *target).stdout == "mail was resumed already\n"
    assert asyncio.run(paused(store_url, namespace)) == {"spread"}
    assert "due (paused)" not in invoke("ls", "mail", *target).stdout


def test_a_bad_type_name_is_refused(target: list[str]) -> None:
    result = invoke("pause", "no such type", *target)
    assert result.exit_code == 2 and "not a valid name" in result.output
