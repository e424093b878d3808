"""A duetime worker process for the fault tests: ``python -m tests.faults.worker_app ...``.

It registers one task type whose handler appends ledger lines and then calls
``app.run()``, the blocking entry point with SIGTERM/SIGINT handling, so the tests signal a
real worker process. Each handler run appends, to ``<ledger dir>/ledger-<pid>.log``::

    start  <task id> <token> <attempt> <pid> <wall ms> <due ms> <occurrence>
    effect <task id> <token> <attempt> <pid> <wall ms> <due ms> <occurrence>

``start`` as the handler begins, ``effect`` just before it returns. Each line is one
``os.write`` on an ``O_APPEND`` descriptor, so it survives a SIGKILL of this process the
moment after (reliability.md section 4.1). Wall times come from ``CLOCK_REALTIME`` read
directly, which the clock-skew wrapper (``skewed_worker``) leaves alone: the ledger stays
comparable with Redis ``TIME`` on this host whatever this process's ``time.time`` says.

Handler modes (``--mode``):

* ``ledger``: write the two lines and return;
* ``sleep:<seconds>``: sleep (asyncio) between the two lines;
* ``hang``: write ``start`` and wait forever (only a cancel or a kill ends it).

A payload ``{"sleep": <seconds>}`` overrides the mode's sleep for that task.

``--expiring <ttl s>`` makes the type an expiring group instead, whose handler writes
``start``, then ``value <key> ... <value as compact JSON>`` (in the occurrence's column),
then ``effect``. ``--key-expired <pattern>@<db>`` adds an ``on_key_expired`` handler, of
type ``keyExpired``, that writes ``start``, sleeps as the mode says, and writes ``effect``
with the key as the task id.

``--cron <expression>`` makes the type a cron schedule of the same name (``--overlap``
sets its overlap policy) whose handler is the one above: the ledger's task id is the
schedule's name and its occurrence ``<name>@<tick ms>``.

``--durability replicated`` opens the app with ``durability="replicated"`` (every write
of the worker, claims and settles included, waits for a replica); ``local`` by default.

Flow control: ``--rate 50/s``, ``--global-concurrency 3`` and ``--group-concurrency 1`` are
the type's options;
``--rate-limited <seconds>`` makes the task whose id is ``trigger`` raise
``RateLimited(after=<seconds>)`` the first time any worker runs it (a marker file in the
ledger directory, created exclusively, says it did), after its ``start`` line.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import logging
import os
import signal
import sys
import time
from datetime import timedelta
from typing import Any

import duetime


def wall_ms() -> float:
    """This host's real wall clock in ms (not ``time.time``, which a test may skew)."""
    return time.clock_gettime_ns(time.CLOCK_REALTIME) / 1e6


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="worker_app")
    parser.add_argument("--url", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--ledger", required=True, help="directory for the ledger file")
    parser.add_argument("--task-type", default="work")
    parser.add_argument("--mode", default="ledger")
    parser.add_argument("--lease", type=float, default=30.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=30.0, help="0 for none")
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--max-stalls", type=int, default=3)
    parser.add_argument("--grace", type=float, default=5.0)
    parser.add_argument("--expiring", type=float, help="an expiring group with this TTL (s)")
    parser.add_argument("--key-expired", help="an on_key_expired handler: <pattern>@<db>")
    parser.add_argument("--durability", default="local", choices=("local", "replicated"))
    parser.add_argument("--cron", help="a cron schedule of this expression, not a task type")
    parser.add_argument("--overlap", default="skip", choices=("skip", "allow"))
    parser.add_argument("--rate", help="the type's rate, e.g. 50/s")
    parser.add_argument("--global-concurrency", type=int, help="the type's global concurrency")
    parser.add_argument("--max-idle", type=float, help="the type's pacing: its max_idle (s)")
    parser.add_argument("--group-concurrency", type=int, help="the type's group concurrency")
    parser.add_argument("--rate-limited", type=float, help="trigger raises RateLimited(after=)")
    return parser.parse_args(argv)


def first_time(folder: str, name: str) -> bool:
    """Whether this is the first process to get here for ``name`` (across processes)."""
    try:
        os.close(os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


def policy_of(args: argparse.Namespace) -> dict[str, Any]:
    """The type's options, from the flags."""
    policy: dict[str, Any] = {
        "concurrency": args.concurrency,
        "timeout": args.timeout or None,
        "retries": args.retries,
        "lease": timedelta(seconds=args.lease),
        "max_stalls": args.max_stalls,
    }
    if args.rate:
        policy["rate"] = args.rate
    if args.global_concurrency:
        policy["global_concurrency"] = args.global_concurrency
    if args.group_concurrency:
        policy["group_concurrency"] = args.group_concurrency
    if args.max_idle:
        policy["pacing"] = duetime.Pacing(max_idle=timedelta(seconds=args.max_idle))
    return policy


def build(args: argparse.Namespace) -> duetime.App:
    app = duetime.App(args.url, namespace=args.namespace, durability=args.durability)
    fd = os.open(
        os.path.join(args.ledger, f"ledger-{os.getpid()}.log"),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND,
        0o644,
    )
    pid = os.getpid()
    mode, _, arg = args.mode.partition(":")
    if mode not in ("ledger", "sleep", "hang"):
        raise SystemExit(f"unknown mode {args.mode!r}")
    default_sleep = float(arg) if mode == "sleep" else 0.0

    def note(kind: str, ctx: duetime.Context) -> None:
        due_ms = int(ctx.due.timestamp() * 1000 + 0.5)
        line = (
            f"{kind} {ctx.task_id} {ctx.token} {ctx.attempt} {pid} {wall_ms():.3f} {due_ms} "
            f"{ctx.occurrence}\n"
        )
        os.write(fd, line.encode())

    policy = policy_of(args)
    if args.expiring is not None:
        group = app.expiring(args.task_type, ttl=args.expiring, **policy)

        @group.on_expire
        async def expired(key: str, value: Any, ctx: duetime.Context) -> None:
            note("start", ctx)
            compact = json.dumps(value, separators=(",", ":"))
            os.write(
                fd, f"value {key} 0 {ctx.attempt} {pid} {wall_ms():.3f} 0 {compact}\n".encode()
            )
            note("effect", ctx)
    else:
        declare = (
            app.task(args.task_type, **policy)
            if args.cron is None
            else app.cron(args.cron, name=args.task_type, overlap=args.overlap, **policy)
        )

        @declare
        async def work(payload: dict[str, Any], ctx: duetime.Context) -> None:
            note("start", ctx)
            limited = args.rate_limited
            if limited is not None and ctx.task_id == "trigger":
                if first_time(args.ledger, "rate-limited"):
                    raise duetime.RateLimited(after=limited, reason="429 from the partner")
            if mode == "hang":
                await asyncio.Event().wait()
            pause = float(payload.get("sleep", default_sleep))
            if pause > 0:
                await asyncio.sleep(pause)
            note("effect", ctx)

    if args.key_expired:
        pattern, _, db = args.key_expired.rpartition("@")

        @app.on_key_expired(pattern, db=int(db), name="keyExpired")
        async def key_expired(key: str, ctx: duetime.Context) -> None:
            line = f"{{kind}} {key} {ctx.token} {ctx.attempt} {pid} {{t:.3f}} 0 {ctx.occurrence}\n"
            os.write(fd, line.format(kind="start", t=wall_ms()).encode())
            await asyncio.sleep(default_sleep)
            os.write(fd, line.format(kind="effect", t=wall_ms()).encode())

    return app


def dump_tasks(signum: int, frame: object) -> None:
    """SIGUSR1: write every asyncio task's stack to stderr (the tests ask for it when they
    fail, to show where a stuck worker waits)."""
    loop = asyncio._get_running_loop()
    if loop is None:
        return
    out = io.StringIO()
    for task in asyncio.all_tasks(loop):
        task.print_stack(file=out)
    sys.stderr.write(f"--- asyncio tasks of {os.getpid()} ---\n{out.getvalue()}")
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(relativeCreated)6d %(process)d %(name)s %(levelname)s %(message)s",
    )
    log = logging.getLogger("worker_app")
    # The clock-skew test reads this line to check that its skew is in effect here.
    log.info("worker_app: time.time() %.3f wall %.3f", time.time(), wall_ms() / 1000)
    app = build(args)
    signal.signal(signal.SIGUSR1, dump_tasks)
    app.run(grace=args.grace)
    log.info("worker_app: exiting")


if __name__ == "__main__":
    main()
