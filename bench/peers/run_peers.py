"""The team's shared peer harness with duetime in it, in one command.

    python bench/peers/run_peers.py --peers duetime,duetime-default,huey,apscheduler --runs 1
    python bench/peers/run_peers.py --rev d27d428 --peers duetime --runs 1 --n 2000 --no-physical
    python bench/peers/run_peers.py --rev WORKTREE --peers duetime ...   # uncommitted changes

This script's own options are ``--rev`` and ``--harness``; every other argument goes to the
harness's run.py as given (its ``--peers``, ``--runs``, ``--n``, ``--w2-n``, ``--workloads``,
``--no-physical``, ``--out``, ...; its default is ``--peers all --runs 2``, duetime included).
It:

1. copies the harness (``--harness``, else env PEERS_HARNESS, else ``../shared/bench/peers``
   beside the main checkout) into a new temporary directory, which is kept: the results
   (run.py's ``--out``, by default ``results.json`` in the copy) and the worker logs
   (``logs/``) stay there. Into the copy go the adapters of this checkout
   (``duetime_peer.py``, ``duetime_default_peer.py``), also when measuring another
   revision, and ``run_duetime.py``, which adds "duetime" and "duetime-default" to run.py's
   PEERS and calls its ``main()``: run.py itself is not changed;
2. makes ``$PEERS_VENV_DIR/duetime`` (default /tmp/peers-venvs/duetime): a venv with
   duetime at ``--rev`` (default HEAD) installed as a package, not editable (see
   duetime_peer.py for why), from ``git archive``; kept while the package's code is the same;
3. runs the harness's setup.sh (which makes every peer's venv, from its locks) if a venv
   that the chosen peers need is missing;
4. starts a redis-server of its own on a free port, without persistence (the harness runs
   FLUSHALL on ``BENCH_REDIS_URL``), runs the harness against it, and stops it.

Run it with the project's venv (``.venv/bin/python``): it needs redis-py and tests/servers.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pprint
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ab_build import PACKAGE_PATHS, git, package_key, resolve, run  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

ADAPTERS = ("duetime_peer.py", "duetime_default_peer.py")

#: The entries run_duetime.py adds to run.py's PEERS ({bin}: the venv's bin dir).
PEERS = {
    "duetime": {
        "venv": "duetime",
        "adapter": "duetime_peer",
        "workers": [["{bin}/python", "-m", "adapters.duetime_peer"]],
        "conc": "app.run() (uvloop); concurrency=1000, timeout=None",
    },
    "duetime-default": {
        "venv": "duetime",
        "adapter": "duetime_default_peer",
        "workers": [["{bin}/python", "-m", "adapters.duetime_default_peer"]],
        "conc": "app.run() (uvloop); concurrency=16, timeout=5 min (defaults)",
    },
}

LAUNCHER = '''"""The harness's run.py with duetime's peers (by duetime's bench/peers/run_peers.py).

    $PEERS_VENV_DIR/base/bin/python run_duetime.py ARGS...   # as run.py ARGS...
"""
import run

run.PEERS.update(
{peers}
)

if __name__ == "__main__":
    run.main()
'''

#: Prints the venvs that run.py's --peers value (argv[1]) needs, run in the copy.
NEEDED_VENVS = """
import json, sys, run, run_duetime
peers = run.PEERS
names = [n for n in peers if not peers[n].get("extra")] if sys.argv[1] == "all" \\
    else sys.argv[1].split(",")
print(json.dumps(sorted({peers[n]["venv"] for n in names})))
"""


def default_harness() -> Path:
    if "PEERS_HARNESS" in os.environ:
        return Path(os.environ["PEERS_HARNESS"])
    # The main checkout's, so that a worktree finds the same folder.
    main_checkout = (ROOT / git(ROOT, "rev-parse", "--git-common-dir")).resolve().parent
    return main_checkout.parent / "shared" / "bench" / "peers"


def copy_harness(harness: Path) -> Path:
    copy = Path(tempfile.mkdtemp(prefix="duetime-peers-")) / "peers"
    shutil.copytree(harness, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for path in [copy, *copy.rglob("*")]:  # the shared folder is read-only
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    for name in ADAPTERS:
        shutil.copy(HERE / name, copy / "adapters" / name)
    peers = pprint.pformat(PEERS, width=96, sort_dicts=False)
    (copy / "run_duetime.py").write_text(LAUNCHER.format(peers=peers))
    return copy


def build_duetime(rev: str, venv: Path, python: str) -> str:
    """Install duetime at ``rev`` into ``venv`` unless it holds that package code already;
    returns the commit."""
    commit, tree = resolve(ROOT, rev)
    version = run([python, "-c", "import sys; print(sys.version)"]).strip()
    key = {"package": package_key(ROOT, tree), "python": f"{python}: {version}"}
    marker = venv / "duetime-build.json"
    if marker.exists() and json.loads(marker.read_text()).get("key") == key:
        log(f"duetime {rev} ({commit[:7]}): {venv} has it already")
        return commit
    log(f"duetime {rev} ({commit[:7]}): installing into {venv}")
    shutil.rmtree(venv, ignore_errors=True)
    run([python, "-m", "venv", str(venv)])
    paths = git(ROOT, "ls-tree", "--name-only", tree, "--", *PACKAGE_PATHS).splitlines()
    archive = subprocess.run(
        ["git", "archive", tree, "--", *paths], cwd=ROOT, capture_output=True, check=True
    )
    with tempfile.TemporaryDirectory(prefix="duetime-src-") as src:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(src, filter="data")
        run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", src])
    marker.write_text(json.dumps({"key": key, "rev": rev, "commit": commit}, indent=1))
    return commit


def ensure_peer_venvs(copy: Path, venvs: Path, peers: str, env: dict[str, str]) -> None:
    base = venvs / "base" / "bin" / "python"
    if base.exists():
        query = [str(base), "-c", NEEDED_VENVS, peers]
        out = subprocess.run(query, cwd=copy, env=env, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"the harness's PEERS has no {peers!r}?\n{out.stderr}")
        needed = json.loads(out.stdout)
        missing = [v for v in needed if not (venvs / v / "bin" / "python").exists()]
    else:
        missing = ["base"]
    if missing:
        log(f"missing venvs {', '.join(missing)}: running the harness's setup.sh")
        subprocess.run([str(copy / "setup.sh")], env=env, check=True)


def stamp(out: Path, started: float, rev: str, commit: str) -> None:
    """Name the duetime revision measured in the results file, if this run wrote it."""
    if out.exists() and out.stat().st_mtime >= started:
        doc = json.loads(out.read_text())
        doc.setdefault("meta", {})["duetime"] = {"rev": rev, "commit": commit}
        out.write_text(json.dumps(doc, indent=1))


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} run_peers: {msg}", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Every other argument goes to the harness's run.py.",
        allow_abbrev=False,  # an abbreviation of run.py's options must reach run.py
    )
    ap.add_argument("--rev", default="HEAD", help="duetime revision, or WORKTREE (default HEAD)")
    ap.add_argument("--harness", type=Path, help="the harness folder (default: PEERS_HARNESS)")
    args, harness_args = ap.parse_known_args()
    # What this script needs to know of run.py's arguments (same defaults as run.py's).
    peek = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    peek.add_argument("--peers", default="all")
    peek.add_argument("--out")
    seen, _ = peek.parse_known_args(harness_args)

    harness = args.harness or default_harness()
    if not (harness / "run.py").is_file():
        raise SystemExit(f"no peer harness at {harness} (give --harness or PEERS_HARNESS)")
    venvs = Path(os.environ.get("PEERS_VENV_DIR", "/tmp/peers-venvs"))  # the harness's default
    python = os.environ.get("PYTHON", "python3")  # as setup.sh's venvs
    commit = build_duetime(args.rev, venvs / "duetime", python)
    copy = copy_harness(harness)
    log(f"harness copied to {copy}")
    env = {**os.environ, "PEERS_VENV_DIR": str(venvs), "BENCH_LOG_DIR": str(copy / "logs")}
    ensure_peer_venvs(copy, venvs, seen.peers, env)

    out = Path(seen.out).resolve() if seen.out else copy / "results.json"
    started = time.time()
    # A port the OS picks (never 6379): the harness runs FLUSHALL on it.
    with RedisServer() as server:
        log(f"redis-server on {server.url}; running the harness")
        env["BENCH_REDIS_URL"] = server.url
        cmd = [str(venvs / "base" / "bin" / "python"), str(copy / "run_duetime.py")]
        code = subprocess.run([*cmd, *harness_args], env=env, check=False).returncode
    stamp(out, started, args.rev, commit)
    log(f"duetime {args.rev} ({commit[:7]}); harness exit code {code}")
    log(f"results: {out}")
    log(f"worker logs: {copy / 'logs'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
