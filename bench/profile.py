"""Where a worker's time goes on W2: a sampling profile of the worker process bench/ab.py
measures, for any revision, summarised as each function's own share of the samples.

    python bench/profile.py                         # the working tree, Redis, 100,000 tasks
    python bench/profile.py --rev d27d428           # another revision, from its own build
    python bench/profile.py --store sqlite --n 50000 --top 40 --raw /tmp/w2.txt

It needs py-spy on the PATH (``pip install py-spy``: a sampling profiler that reads the
process from outside, so the worker runs unchanged). The revision is built as bench/ab.py
builds it (a venv of its own, cached), and its worker is bench/ab_agent.py's, with W2's
tasks and handler (a no-op that takes the payload alone), at the revision's defaults
(monitoring and the run history on where it has them). Redis is a ``redis-server`` of the
script's own on a free port. Samples of the process's start (imports, connecting) and of
its end (writing its results) are left out: only the worker running tasks is counted.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ab_build import WORKTREE, build, default_cache  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

AGENT = ROOT / "bench" / "ab_agent.py"
#: Frames of what is not the worker running tasks: start-up, imports, the results' dump.
SKIP = re.compile(r"_find_and_load|_handle_fromlist|JSONEncoder|write_text")
#: A frame's line number, left out to add up a function's lines.
LINE = re.compile(r":\d+\)$")


def summarise(raw: Path, top: int) -> None:
    """Each function's own share of the samples taken while the worker ran tasks, then
    each line's."""
    own: collections.Counter[str] = collections.Counter()
    lines: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack_text, _, count_text = line.rpartition(" ")
        if not stack_text:
            continue
        stack, count = stack_text.split(";"), int(count_text)
        if any(SKIP.search(frame) for frame in stack):
            continue
        total += count
        own[LINE.sub(")", stack[-1])] += count
        lines[stack[-1]] += count
    print(f"{total} samples while the worker ran; each function's own share:")
    for name, count in own.most_common(top):
        print(f"{100 * count / total:6.2f} %  {name}")
    print("\nthe lines:")
    for name, count in lines.most_common(top):
        print(f"{100 * count / total:6.2f} %  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default=WORKTREE, help="a revision, or WORKTREE (default)")
    parser.add_argument("--store", default="redis", choices=("redis", "sqlite"))
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rate", type=int, default=500, help="samples a second")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--raw", help="keep py-spy's folded stacks in this file")
    parser.add_argument(
        "--all-threads",
        action="store_true",
        help="sample every thread, waiting or not (by default only the thread that holds "
        "the GIL: where the worker's CPU goes, the SQLite store's thread included)",
    )
    args = parser.parse_args()
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy is not on the PATH: pip install py-spy")
    b = build(ROOT, args.rev, default_cache(), sys.executable)
    agent = [str(b.python), "-I", str(AGENT)]
    with tempfile.TemporaryDirectory(prefix="duetime-profile-") as tmpdir, RedisServer() as server:
        tmp = Path(tmpdir)
        ns = "prof" + uuid.uuid4().hex[:8]
        url = server.url if args.store == "redis" else f"sqlite:///{tmp / 'p.db'}"
        subprocess.run([*agent, "seed", url, ns, str(args.n)], check=True, capture_output=True)
        raw = Path(args.raw) if args.raw else tmp / "raw.txt"
        worker = [*agent, "worker", url, ns, str(args.n), str(tmp / "out.json"), "1000"]
        cmd = [spy, "record", "-r", str(args.rate), "-f", "raw", "-o", str(raw)]
        cmd += [] if args.all_threads else ["--gil"]
        cmd += ["--", *worker]
        subprocess.run(cmd, check=True, capture_output=True)
        print(f"{b.label}, {args.store}, {args.n} tasks")
        summarise(raw, args.top)


if __name__ == "__main__":
    main()
