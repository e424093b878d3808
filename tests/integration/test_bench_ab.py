"""bench/ab.py, the A/B benchmark: two builds measured end to end, and how its table reads."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench_module(name: str) -> Any:
    """A module of bench/ (a directory of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ab_table = bench_module("ab_table")
METRICS, table = ab_table.METRICS, ab_table.table

NUMBER = r"[0-9][0-9,]*(\.[0-9]+)?"


def builds_cache(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """pytest's cache directory (inside the checkout, ignored by git), so that a rerun
    reuses the builds, as a developer's runs of bench/ab.py do; a fresh one without it."""
    cache = getattr(request.config, "cache", None)
    return Path(cache.mkdir("duetime-ab")) if cache is not None else tmp_path / "builds"


@pytest.mark.bench
@pytest.mark.timeout(150)  # about 20 s; up to a minute more when both builds are made anew
def test_ab_measures_two_builds_and_prints_every_metric(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    cache = builds_cache(request, tmp_path)
    raw_path = tmp_path / "ab.json"
    cmd = [sys.executable, str(ROOT / "bench" / "ab.py"), "HEAD", "WORKTREE", "--quick"]
    cmd += ["--stores", "sqlite", "--rounds", "1", "--cache", str(cache), "--json", str(raw_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=140, check=False)
    assert proc.returncode == 0, proc.stderr

    out = proc.stdout
    assert re.search(r"A = HEAD \([0-9a-f]{7}\), B = WORKTREE \([0-9a-f]{7}\+", out), out
    # The timed workloads' metrics on SQLite (the counted ones run only when named).
    measured = [m for m in METRICS if m.workload in ("w1", "w2", "w3") and not m.redis_only]
    for metric in measured:
        rows = [line for line in out.splitlines() if line.startswith(f"| {metric.label} |")]
        assert len(rows) == 1, (metric.label, out)
        cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
        a, b, ratio = cells[1:4]
        assert re.fullmatch(NUMBER, a) and re.fullmatch(NUMBER, b), rows[0]
        assert re.fullmatch(r"[0-9]+\.[0-9]{2}", ratio), rows[0]
        assert float(a.replace(",", "")) > 0 and float(b.replace(",", "")) > 0, rows[0]

    raw = json.loads(raw_path.read_text())
    for rev in ("A", "B"):
        # Each revision ran from a venv of its own build, in the cache.
        assert Path(raw["builds"][rev]["python"]).is_relative_to(cache)
        figures: dict[str, Any] = {}
        for record in raw["results"]:
            if record["rev"] == rev:
                assert record["store"] == "sqlite" and record["round"] == 1
                figures.update(record)
        assert {m.key for m in measured} <= figures.keys()
        assert figures["w3_producer_overran_s"] < 0  # every task was scheduled before due


@pytest.mark.bench
@pytest.mark.timeout(400)  # about 70 s; up to a minute more when the build is made anew
def test_the_counted_workloads_give_a_builds_instructions_the_same_each_time(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # W1i and W2i count what the producer and the worker execute, under valgrind: one build
    # against itself counts alike (rates of the same build differ by a tenth from run to run).
    assert shutil.which("valgrind"), (
        "the counted workloads need valgrind (apt-get install valgrind)"
    )
    cmd = [sys.executable, str(ROOT / "bench" / "ab.py"), "HEAD", "HEAD", "--quick"]
    cmd += [
        "--stores",
        "sqlite",
        "--workloads",
        "w1i,w2i",
        "--cache",
        str(builds_cache(request, tmp_path)),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=390, check=False)
    assert proc.returncode == 0, proc.stderr

    for label in ("W1i producer instructions/call", "W2i worker instructions/task"):
        _, a, b, ratio, _ = line(proc.stdout, label)
        for count in (a, b):
            # A call or a task takes tens of thousands of instructions or more: a count
            # that is not per unit (the process's start left in) or is empty reads far off.
            assert 10_000 < float(count.replace(",", "")) < 5_000_000, (label, count)
        assert 0.9 <= float(ratio) <= 1.1, (label, a, b)
    for label in ("W1i producer start, M instructions", "W2i worker start, M instructions"):
        # The rest of the process, in millions: Python's start and the imports at least.
        _, a, b, ratio, _ = line(proc.stdout, label)
        assert 50 < float(a.replace(",", "")) < 5_000, (label, a)
        assert 0.9 <= float(ratio) <= 1.1, (label, a, b)
    assert "W1 one call" not in proc.stdout  # only the workloads named ran


@pytest.mark.bench
@pytest.mark.timeout(300)  # about 30 s; up to a minute more when the build is made anew
def test_w2s_counts_the_redis_servers_instructions_per_task_the_same_each_time(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # W2s counts what a redis-server of its own (under callgrind) executes for W2's worker.
    assert shutil.which("valgrind") and shutil.which("callgrind_control"), (
        "W2s needs valgrind with callgrind_control (apt-get install valgrind)"
    )
    # At full size (2,000 and 12,000 tasks): --quick's hundreds of tasks make batches whose
    # sizes vary from run to run, and the server's work a task with them.
    cmd = [sys.executable, str(ROOT / "bench" / "ab.py"), "HEAD", "HEAD", "--rounds", "1"]
    cmd += ["--stores", "redis", "--workloads", "w2s"]
    cmd += ["--cache", str(builds_cache(request, tmp_path))]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=290, check=False)
    assert proc.returncode == 0, proc.stderr
    _, a, b, ratio, _ = line(proc.stdout, "W2s Redis server instructions/task")
    for count in (a, b):
        # A claim and a settle of a task in Lua: thousands of instructions at least, and
        # far from the millions a count with the server's start left in would read.
        assert 5_000 < float(count.replace(",", "")) < 1_000_000, count
    assert 0.9 <= float(ratio) <= 1.1, (a, b)
    assert "W2 start" not in proc.stdout  # only the workload named ran


def records(metric: str, a: list[float], b: list[float]) -> list[dict[str, Any]]:
    rows = []
    for rev, values in (("A", a), ("B", b)):
        for rnd, value in enumerate(values, 1):
            rows.append({"round": rnd, "store": "redis", "rev": rev, metric: value})
    return rows


def line(text: str, label: str) -> list[str]:
    row = next(r for r in text.splitlines() if r.startswith(f"| {label} |"))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_the_table_gives_medians_the_ratio_its_spread_and_a_reading() -> None:
    # Rates: B's rounds all above A's, so B is better; the ratio is of the medians, the
    # spread is of the rounds' own ratios (2000/1000, 2200/1100, 2100/1500).
    rows = records("w1_per_s", [1000, 1100, 1500], [2000, 2200, 2100])
    # CPU: B's rounds all above A's, which is worse for a cost.
    rows += records("w2_cpu_us_per_task", [10, 11, 12], [13, 14, 15])
    # Lateness: the ranges overlap, so nothing is read into the ratio.
    rows += records("w3_p99_ms", [1.0, 2.0, 3.0], [1.5, 2.5, 0.5])
    text = table(rows, "redis", ("a", "b"))

    assert line(text, "W1 one call /s") == [
        "W1 one call /s",
        "1,100 (1,000–1,500)",
        "2,100 (2,000–2,200)",
        "1.91 (1.40–2.00)",
        "B better",
    ]
    assert line(text, "W2 worker CPU µs/task")[3:] == ["1.27 (1.25–1.30)", "B worse"]
    assert line(text, "W3 p99 ms")[3:] == ["0.75 (0.17–1.50)", "within noise"]
    # A metric with no figures has no row.
    assert "W2 start→last" not in text


def test_one_round_gives_no_reading() -> None:
    text = table(records("w1_per_s", [1000], [2000]), "redis", ("a", "b"))
    assert line(text, "W1 one call /s")[1:] == ["1,000", "2,000", "2.00", "(one round)"]
