"""Where a worker's time goes on W2: a sampling profile of one worker process firing N due
no-op tasks, summarised as each function's own share of the samples.

    python bench/profile.py                       # Redis, 200,000 tasks
    python bench/profile.py --store sqlite --n 100000
    python bench/profile.py --top 40 --raw /tmp/w2.txt   # keep the folded stacks too

It needs py-spy on the PATH (``pip install py-spy``: a sampling profiler that reads the
process from outside, so the worker runs unchanged). The worker is ``bench/worker_proc.py``
on this checkout's ``src/``, monitoring and the run history on (the defaults); Redis is a
``redis-server`` of the script's own on a free port (tests.servers). Samples taken before
the first handler (interpreter start, imports, connecting) are left out by the worker's
own marks: only stacks under the worker's run loop are counted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.servers import RedisServer  # noqa: E402

import duetime  # noqa: E402

PAD = "x" * 60
#: Frames of what is not the worker running tasks: start-up, imports, the results' dump.
SKIP = re.compile(r"_find_and_load|serve_until|^main \(worker_proc|_handle_fromlist")
#: A frame's line number, left out to add up a function's lines.
FUNCTION = re.compile(r":\d+\)$")


async def seed(url: str, ns: str, n: int) -> None:
    app = duetime.App(url, namespace=ns)
    app.declare("bench")
    due = datetime.now(UTC) - timedelta(seconds=1)
    now = time.time() - 1
    for start in range(0, n, 50_000):
        await app.schedule_many(
            duetime.Task("bench", f"t{i}", at=due, payload={"i": i, "due": now, "pad": PAD})
            for i in range(start, min(n, start + 50_000))
        )
    await app.close()


def frames(line: str) -> tuple[list[str], int]:
    stack, _, count = line.rpartition(" ")
    return stack.split(";"), int(count)


def summarise(raw: Path, top: int) -> None:
    """Each function's own share of the samples taken while the worker ran tasks (not
    while the process started, imported or wrote its results)."""
    own: collections.Counter[str] = collections.Counter()
    lines: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        if not line.strip():
            continue
        stack, count = frames(line)
        if any(SKIP.search(f) for f in stack):
            continue
        total += count
        own[FUNCTION.sub("", stack[-1])] += count
        lines[stack[-1]] += count
    print(f"{total} samples while the worker ran; each function's own share:")
    for name, count in own.most_common(top):
        print(f"{100 * count / total:6.2f} %  {name}")
    print("\nby line:")
    for name, count in lines.most_common(top):
        print(f"{100 * count / total:6.2f} %  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="redis", choices=("redis", "sqlite"))
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--rate", type=int, default=500, help="samples a second")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--raw", help="keep py-spy's folded stacks in this file")
    args = parser.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy is not on the PATH: pip install py-spy")
    with tempfile.TemporaryDirectory(prefix="duetime-profile-") as tmpdir, RedisServer() as server:
        tmp = Path(tmpdir)
        ns = "prof" + uuid.uuid4().hex[:8]
        url = server.url if args.store == "redis" else f"sqlite:///{tmp / 'p.db'}"
        asyncio.run(seed(url, ns, args.n))
        out = tmp / "out.json"
        raw = Path(args.raw) if args.raw else tmp / "raw.txt"
        worker = [sys.executable, str(ROOT / "bench" / "worker_proc.py"), "--url", url]
        worker += ["--namespace", ns, "--n", str(args.n), "--out", str(out)]
        cmd = [spy, "record", "-r", str(args.rate), "-f", "raw", "-o", str(raw), "--", *worker]
        subprocess.run(cmd, check=True, capture_output=True)
        data = json.loads(out.read_text())
        cpu = (data["cpu"][-1] - data["cpu"][0]) / max(args.n - 1, 1) * 1e6
        print(f"{args.store}: {args.n} tasks, {cpu:.2f} µs of worker CPU a task (under py-spy)")
        summarise(raw, args.top)


if __name__ == "__main__":
    main()
