"""duetime's adapter for the shared peer harness (``bench/peers`` of the team's shared folder).

Copy the harness somewhere writable, put this file in its ``adapters/``, and add to PEERS in
its run.py::

    "duetime": dict(venv="duetime", adapter="duetime_peer",
                    workers=[["{bin}/python", "-m", "adapters.duetime_peer"]],
                    conc="app.run() (uvloop); concurrency=1000, timeout=None"),

with a venv made by ``python3 -m venv $PEERS_VENV_DIR/duetime`` and
``$PEERS_VENV_DIR/duetime/bin/pip install <this checkout>``: installed, not editable, so
that its bytecode is compiled at install time like the peers' (with an editable install
and PYTHONDONTWRITEBYTECODE set, every worker start compiles duetime anew, about 0.1 s
of W2 here). The task type runs with
concurrency=1000 and timeout=None, as bench/bench.py does (duetime's defaults are 16 and
5 min). ``schedule`` uses ``App.submit``, so duetime picks each task's id (12 characters),
as the peers pick theirs; ``schedule_bulk`` uses ``schedule_many`` with uuid4 ids.
"""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import common  # the harness's module, first on its sys.path

import duetime

DISTS = ["duetime", "redis", "hiredis", "uvloop"]
app = duetime.App(common.REDIS_URL, namespace="bench")


@app.task("bench", concurrency=1000, timeout=None)
async def handler(payload):
    await common.arecord(payload)


async def open():
    await app.open()


async def schedule(due, payload):
    await app.submit("bench", at=datetime.fromtimestamp(due, UTC), payload=payload)


async def schedule_bulk(items):
    await app.schedule_many(
        [
            duetime.Task("bench", uuid4().hex, at=datetime.fromtimestamp(due, UTC), payload=p)
            for due, p in items
        ]
    )


async def close():
    await app.close()


if __name__ == "__main__":
    app.run()
