"""bench/ab.py's builds: a revision of this repository installed into a venv of its own.

A build is keyed by the package's code (``src/`` and ``pyproject.toml`` as git hashes
them) and the Python that runs it, not by the name given for it: ``HEAD`` and a working
tree whose changes lie elsewhere (tests, docs, bench) share one build, and a rerun finds
the builds of the last one. (``README.md`` is installed too, as the package's description,
but leaves the key alone: a change to it changes no figure.) Each build is a venv under
the cache directory with those files installed into it as a package (not editable: pip
compiles its bytecode at install, as a user's install has it); ``built.json`` in it,
written last, marks it complete. Builds not used for ``PRUNE_AFTER_DAYS`` are removed
(about 60 MB each).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: The name for the uncommitted working tree (tracked and untracked files that git does not
#: ignore), so that a change can be measured before it is committed.
WORKTREE = "WORKTREE"

#: The distributions whose versions a build reports: a difference between two builds in
#: one of these would be measured as a difference between the revisions.
REPORTED = ("redis", "hiredis", "uvloop")

#: What a build installs; the key covers the first two.
PACKAGE_PATHS = ("src", "pyproject.toml", "README.md")
KEYED_PATHS = PACKAGE_PATHS[:2]

PRUNE_AFTER_DAYS = 14
#: The postgres extra of pyproject.toml, for the builds that lack it.
POSTGRES_EXTRA = "psycopg[binary,pool]>=3.2"


@dataclass(frozen=True, slots=True)
class Build:
    """A revision, installed.

    Attributes:
        name: the revision as the user named it (``HEAD``, ``d27d428``, ``WORKTREE``).
        commit: the commit it names (for ``WORKTREE``, the commit it is based on).
        tree: the git tree it names (for ``WORKTREE``, of the working tree's package).
        key: the build's key, from the package's files.
        python: the venv's interpreter.
        versions: the versions of ``REPORTED`` distributions installed with it.
    """

    name: str
    commit: str
    tree: str
    key: str
    python: Path
    versions: dict[str, str]

    @property
    def label(self) -> str:
        short = self.commit[:7]
        if self.name == WORKTREE:
            return f"{WORKTREE} ({short}+, build {self.key[:7]})"
        return self.name if short.startswith(self.name) else f"{self.name} ({short})"


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def worktree_tree(root: Path) -> str:
    """A git tree of the index with the package's files as they are in the working tree
    (untracked files included, ignored ones not), written through a scratch index so that
    the repository's own index is untouched. (Their blobs go into the object store, as
    ``git stash create`` puts them.)"""
    with tempfile.TemporaryDirectory(prefix="duetime-ab-index-") as tmp:
        index = Path(tmp) / "index"
        shutil.copy(Path(root, git(root, "rev-parse", "--git-path", "index")), index)
        env = {**os.environ, "GIT_INDEX_FILE": str(index)}
        git(root, "add", "--all", "--", *PACKAGE_PATHS, env=env)
        return git(root, "write-tree", env=env)


def package_key(root: Path, tree: str) -> str:
    """The hash of the package code's entries in ``tree`` (their modes, hashes and paths)."""
    listing = git(root, "ls-tree", tree, "--", *KEYED_PATHS)
    return hashlib.sha256(listing.encode()).hexdigest()[:40]


def resolve(root: Path, name: str) -> tuple[str, str]:
    """The commit and the tree ``name`` stands for."""
    if name == WORKTREE:
        return git(root, "rev-parse", "HEAD"), worktree_tree(root)
    proc = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{name!r} names no commit of this repository (nor is it {WORKTREE})")
    commit = proc.stdout.strip()
    return commit, git(root, "rev-parse", f"{commit}^{{tree}}")


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "duetime-ab"


def build(root: Path, name: str, cache: Path, python: str) -> Build:
    """The build of revision ``name``, made now unless the cache has it."""
    commit, tree = resolve(root, name)
    pyver = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    key = package_key(root, tree)
    home = cache / f"{key}-py{pyver}"
    cache.mkdir(parents=True, exist_ok=True)
    # Two runs at once (two developers, or a test beside a run) must not build into one
    # directory: the second waits for the first and then reuses its build.
    with open(f"{home}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = home / "built.json"
        if not marker.exists():
            make(root, tree, home, python, name)
        with_postgres(home)
        marker.touch()  # used now: the pruning goes by this
        info = json.loads(marker.read_text())
    prune(cache)
    return Build(name, commit, tree, key, home / "venv" / "bin" / "python", info["versions"])


def prune(cache: Path) -> None:
    """Remove the builds not used for PRUNE_AFTER_DAYS, each under its lock."""
    too_old = time.time() - PRUNE_AFTER_DAYS * 86400
    for marker in cache.glob("*/built.json"):
        home = marker.parent
        if marker.stat().st_mtime > too_old:
            continue
        with open(f"{home}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if marker.exists() and marker.stat().st_mtime <= too_old:
                shutil.rmtree(home)  # its empty lock file stays: another run may hold it


def make(root: Path, tree: str, home: Path, python: str, name: str) -> None:
    if home.exists():
        shutil.rmtree(home)  # a build that did not finish
    src = home / "src"
    src.mkdir(parents=True)
    paths = git(root, "ls-tree", "--name-only", tree, "--", *PACKAGE_PATHS).splitlines()
    archive = subprocess.run(
        ["git", "archive", tree, "--", *paths], cwd=root, capture_output=True, check=True
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(src, filter="data")
    print(f"building {name} (tree {tree[:7]}) into {home}", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    venv = home / "venv"
    run([python, "-m", "venv", str(venv)])
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(src)])
    freeze = run([str(venv / "bin" / "python"), "-m", "pip", "freeze"]).splitlines()
    versions = {}
    for line in freeze:
        dist, _, version = line.partition("==")
        if dist.lower() in REPORTED:
            versions[dist.lower()] = version
    shutil.rmtree(src)
    info = {"tree": tree, "python": python, "freeze": freeze, "versions": versions}
    (home / "built.json").write_text(json.dumps(info, indent=2))
    print(f"built {name} in {time.monotonic() - t0:.1f} s", file=sys.stderr, flush=True)


def with_postgres(home: Path) -> None:
    """Give a build the postgres extra's packages (psycopg and its pool) if it lacks them:
    builds made before the PostgreSQL store was measured have none."""
    marker = home / "built.json"
    info = json.loads(marker.read_text())
    if any(line.lower().startswith("psycopg-pool==") for line in info["freeze"]):
        return
    python = str(home / "venv" / "bin" / "python")
    run([python, "-m", "pip", "install", "--quiet", POSTGRES_EXTRA])
    info["freeze"] = run([python, "-m", "pip", "freeze"]).splitlines()
    marker.write_text(json.dumps(info, indent=2))


def run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return proc.stdout
