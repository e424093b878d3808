"""duetime's adapter for the shared peer harness (``bench/peers`` of the team's shared folder).

``bench/peers/run_peers.py`` runs the harness with it in one command: it copies the harness
somewhere writable, puts this file and ``duetime_default_peer.py`` in its ``adapters/``,
adds them to its PEERS as::

    "duetime": dict(venv="duetime", adapter="duetime_peer",
                    workers=[["{bin}/python", "-m", "adapters.duetime_peer"]],
                    conc="app.run() (uvloop); concurrency=1000, timeout=None"),

(and "duetime-default" the same way), and makes ``$PEERS_VENV_DIR/duetime``, a venv with
duetime installed, not editable, so that its bytecode is compiled at install time like the
peers' (with an editable install and PYTHONDONTWRITEBYTECODE set, every worker start
compiles duetime anew, about 0.1 s of W2 here). The task type runs with concurrency=1000
and timeout=None, as bench/bench.py does; duetime_default_peer.py runs it at duetime's
defaults (16 and 5 min). ``schedule`` uses ``App.submit``, so duetime picks each task's id
(12 characters), as the peers pick theirs; ``schedule_bulk`` uses ``schedule_many`` with
uuid4 ids.
"""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import common  # the harness's module, first on its sys.path

import duetime

DISTS = ["duetime", "redis", "hiredis", "uvloop"]


async def handler(payload):
    await common.arecord(payload)


class Peer:
    """The harness's calls on one App whose task type "bench" runs ``handler`` with
    ``task_options``."""

    def __init__(self, **task_options):
        self.app = duetime.App(common.REDIS_URL, namespace="bench")
        self.app.task("bench", **task_options)(handler)

    async def open(self):
        await self.app.open()

    async def schedule(self, due, payload):
        await self.app.submit("bench", at=datetime.fromtimestamp(due, UTC), payload=payload)

    async def schedule_bulk(self, items):
        await self.app.schedule_many(
            [
                duetime.Task("bench", uuid4().hex, at=datetime.fromtimestamp(due, UTC), payload=p)
                for due, p in items
            ]
        )

    async def close(self):
        await self.app.close()


peer = Peer(concurrency=1000, timeout=None)
app, open, schedule, schedule_bulk, close = (
    peer.app,
    peer.open,
    peer.schedule,
    peer.schedule_bulk,
    peer.close,
)

if __name__ == "__main__":
    app.run()
