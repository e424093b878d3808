"""duetime's expiring-entries benchmark (W6), against the shadow-key design on keyspace events.

    python bench/expiry.py [--entries 10000] [--spread 10] [--volatile 1000000]
                           [--put-n 20000] [--json out.json]

W6 duetime  expiry lateness (handler start minus the entry's expiry, ``ctx.due``), in ms:
            ``--entries`` entries in one expiring group, expiries spread evenly over
            ``--spread`` s from 2 s after the put starts, handled by one worker process
            (bench/expiry_worker.py); p50/p99/max, and how many were missed: not handled by
            the deadline, the last expiry plus 30 s.
W6 source   the same entries the shadow-key way, on the same server: per entry one
            MULTI of ``SET data:<key> <value>`` and ``SET reminder:<key> expire PX <ms>``,
            and a subscriber process (bench/expiry_source.py) on ``__keyevent@0__:expired``
            that takes ``GETDEL data:<key>`` for each reminder event; lateness is receive
            time minus the intended expiry (carried in the value). Same deadline.
put/s       one ``put`` call per entry (TTL 1 h), ``put_many`` in batches of 1,000, and a
            bare redis-py loop of one ``MULTI; SET data:k v; SET reminder:k expire PX ttl;
            EXEC`` per entry, run in blocks of 500 alternating with the single puts, so that
            machine noise falls on both alike.

First the script fills database 0 with ``--volatile`` unrelated keys with TTLs of 10 to 60
minutes (a Lua script, in batches): Redis's active expiry samples volatile keys at random,
so the few that are due among many that are not are found, and their events published,
late. Redis is a redis-server of the script's own on a free port (tests.servers), never the
machine's shared one. Each process that handles an expiry stamps it with its own
``time.time()``; expiries are compared as epoch seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
import redis.asyncio as aredis  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

import duetime  # noqa: E402

PAD = "x" * (100 - len(json.dumps({"i": 10000, "due": 1764400000.123456, "pad": ""})))
LEAD_S = 2.0  # the first expiry, after the put starts
GRACE_S = 30.0  # the deadline, after the last expiry
PUT_CONCURRENCY = 100  # entries put at once while W6 fills its spread
BLOCK = 500  # single puts and bare MULTIs alternate in blocks of this many
MANY_BATCH = 1000
FILL_BATCH = 50_000
FILL = """
math.randomseed(tonumber(ARGV[3]))
for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do
  redis.call('SET', 'vol:' .. i, 'v', 'PX', math.random(600000, 3600000))
end
return 0
"""


def value(i: int, due: float) -> dict[str, Any]:
    """About 100 bytes of JSON, carrying its intended expiry."""
    return {"i": i, "due": round(due, 6), "pad": PAD}


def fill_volatile(url: str, n: int) -> float:
    """``n`` keys with TTLs of 10 to 60 minutes; returns the seconds it took."""
    client = redis.Redis.from_url(url)
    script = client.register_script(FILL)
    t0 = time.perf_counter()
    for start in range(0, n, FILL_BATCH):
        script(args=[start, min(start + FILL_BATCH, n) - 1, start + 1])
    took = time.perf_counter() - t0
    expires = client.info("keyspace").get("db0", {}).get("expires", 0)
    client.close()
    if expires < n:
        raise RuntimeError(f"filled {expires} volatile keys, not {n}")
    return took


def start_proc(script: str, *args: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(ROOT / "bench" / script), *map(str, args)])


async def wait_path(path: Path, proc: subprocess.Popen[bytes], until: float) -> bool:
    """Wait for ``path`` until the epoch time ``until``; False if it did not come."""
    while not path.exists():  # noqa: ASYNC240 - a stat every 10 ms, nothing else runs
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[1]} exited with {proc.returncode}")
        if time.time() > until:
            return False
        await asyncio.sleep(0.01)
    return True


async def collect(proc: subprocess.Popen[bytes], out: Path, deadline: float) -> dict[str, Any]:
    """The samples of a recording process: all of them, or those by the deadline."""
    if not await wait_path(out, proc, deadline):
        proc.send_signal(signal.SIGTERM)
        if not await wait_path(out, proc, time.time() + 30):
            proc.kill()
            raise RuntimeError(f"{proc.args[1]} wrote nothing")
    proc.wait()
    return json.loads(out.read_text())  # noqa: ASYNC240 - once, after the run


async def spread_puts(put: Callable[[int, float], Awaitable[Any]], n: int, spread: float):
    """Put ``n`` entries, ``PUT_CONCURRENCY`` at a time, expiring evenly over ``spread`` s
    from ``LEAD_S`` from now. Returns (first expiry, seconds the puts took)."""
    t0 = time.time()
    start = t0 + LEAD_S
    for lo in range(0, n, PUT_CONCURRENCY):
        block = range(lo, min(lo + PUT_CONCURRENCY, n))
        await asyncio.gather(*(put(i, start + spread * i / n) for i in block))
    return start, time.time() - t0


def lateness(data: dict[str, Any], n: int, deadline: float) -> dict[str, Any]:
    """p50/p99/max of handling time minus expiry, in ms, over the entries handled by the
    deadline (the first time each key was handled); missed is the rest."""
    first: dict[str, tuple[float, float]] = {}
    for t, due, key in data["samples"]:
        if key not in first or t < first[key][0]:
            first[key] = (t, due)
    late = sorted((t - due) * 1000 for t, due in first.values() if t <= deadline)
    result: dict[str, Any] = {
        "handled": len(late),
        "missed": n - len(late),
        "repeats": len(data["samples"]) - len(first),
    }
    if late:
        result |= {
            "p50_ms": statistics.median(late),
            "p99_ms": late[max(int(len(late) * 0.99) - 1, 0)],
            "max_ms": late[-1],
            "min_ms": late[0],
        }
    return result


async def w6_duetime(url: str, n: int, spread: float, tmp: Path) -> dict[str, Any]:
    ns = "w6" + uuid.uuid4().hex[:8]
    out = tmp / f"{ns}.json"
    proc = start_proc("expiry_worker.py", "--url", url, "--namespace", ns, "--n", n, "--out", out)
    if not await wait_path(Path(f"{out}.ready"), proc, time.time() + 60):
        proc.kill()
        raise RuntimeError("the worker did not start within 60 s")
    app = duetime.App(url, namespace=ns)
    cache = app.expiring("w6", ttl=timedelta(seconds=30))
    await app.open()

    def put(i: int, at: float) -> Awaitable[Any]:
        return cache.put(f"k{i}", value(i, at), ttl=max(at - time.time(), 0.001))

    start, put_s = await spread_puts(put, n, spread)
    await app.close()
    deadline = start + spread + GRACE_S
    result = lateness(await collect(proc, out, deadline), n, deadline)
    return {"put_s": put_s, "puts_done_before_first_expiry": put_s < LEAD_S, **result}


async def w6_source(url: str, n: int, spread: float, tmp: Path) -> dict[str, Any]:
    client = aredis.Redis.from_url(url)
    await client.config_set("notify-keyspace-events", "Ex")
    out = tmp / f"source-{uuid.uuid4().hex[:8]}.json"
    proc = start_proc("expiry_source.py", "--url", url, "--n", n, "--out", out)
    if not await wait_path(Path(f"{out}.ready"), proc, time.time() + 60):
        proc.kill()
        raise RuntimeError("the subscriber did not start within 60 s")

    async def put(i: int, at: float) -> None:
        async with client.pipeline(transaction=True) as pipe:
            pipe.set(f"data:s{i}", json.dumps(value(i, at)))
            pipe.set(f"reminder:s{i}", "expire", px=max(round((at - time.time()) * 1000), 1))
            await pipe.execute()

    start, put_s = await spread_puts(put, n, spread)
    await client.aclose()
    deadline = start + spread + GRACE_S
    data = await collect(proc, out, deadline)
    result = lateness(data, n, deadline)
    before = put_s < LEAD_S
    return {
        "put_s": put_s,
        "puts_done_before_first_expiry": before,
        "events": data["events"],
        **result,
    }


async def put_rate(url: str, n: int) -> dict[str, float]:
    app = duetime.App(url, namespace="put" + uuid.uuid4().hex[:8])
    cache = app.expiring("w6put", ttl=timedelta(hours=1))
    await app.open()
    bare = aredis.Redis.from_url(url)
    ttl_ms = 3_600_000

    async def multi(key: str, val: dict[str, Any]) -> None:
        async with bare.pipeline(transaction=True) as pipe:
            pipe.set(f"data:{key}", json.dumps(val))
            pipe.set(f"reminder:{key}", "expire", px=ttl_ms)
            await pipe.execute()

    await cache.put("warm", value(0, 0.0))  # the scripts loaded, connections open
    await multi("warm", value(0, 0.0))
    single = bare_s = 0.0
    for lo in range(0, n, BLOCK):
        block = range(lo, min(lo + BLOCK, n))
        t0 = time.perf_counter()
        for i in block:
            await cache.put(f"p{i}", value(i, 0.0))
        single += time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in block:
            await multi(f"b{i}", value(i, 0.0))
        bare_s += time.perf_counter() - t0
    t0 = time.perf_counter()
    for lo in range(0, n, MANY_BATCH):
        await cache.put_many({f"m{i}": value(i, 0.0) for i in range(lo, min(lo + MANY_BATCH, n))})
    many = time.perf_counter() - t0
    await bare.aclose()
    await app.close()
    return {
        "put_per_s": n / single,
        "put_many_per_s": n / many,
        "bare_multi_per_s": n / bare_s,
        "put_vs_bare": bare_s / single,
    }


async def run(url: str, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    result: dict[str, Any] = {}
    t0 = time.perf_counter()
    result["w6_duetime"] = await w6_duetime(url, args.entries, args.spread, tmp)
    result["w6_duetime"]["took_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    result["w6_source"] = await w6_source(url, args.entries, args.spread, tmp)
    result["w6_source"]["took_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    result["put"] = await put_rate(url, args.put_n)
    result["put"]["took_s"] = time.perf_counter() - t0
    return result


def report(result: dict[str, Any]) -> None:
    print(f"volatile keys: {result['volatile']:,}, filled in {result['fill_s']:.1f} s")
    for name in ("w6_duetime", "w6_source"):
        r = result[name]
        stats = "".join(
            f" {k[:-3]} {r[k]:9.1f} ms" for k in ("p50_ms", "p99_ms", "max_ms") if k in r
        )
        print(
            f"{name:10}{stats}  handled {r['handled']:,}, missed {r['missed']:,},"
            f" repeats {r['repeats']} (puts took {r['put_s']:.2f} s)"
        )
    p = result["put"]
    print(
        f"put {p['put_per_s']:,.0f}/s  put_many {p['put_many_per_s']:,.0f}/s"
        f"  bare MULTI {p['bare_multi_per_s']:,.0f}/s  put/bare {p['put_vs_bare']:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--spread", type=float, default=10.0)
    parser.add_argument("--volatile", type=int, default=1_000_000)
    parser.add_argument("--put-n", type=int, default=20_000)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "src", quiet=1)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="duetime-expiry-") as tmpdir, RedisServer() as server:
        result: dict[str, Any] = {"volatile": args.volatile, "entries": args.entries}
        result["fill_s"] = fill_volatile(server.url, args.volatile)
        result |= asyncio.run(run(server.url, args, Path(tmpdir)))
    result["total_s"] = time.perf_counter() - began
    report(result)
    print(json.dumps(result), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
