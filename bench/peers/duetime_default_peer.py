"""duetime at its defaults for the shared peer harness ("duetime-default").

As duetime_peer.py, whose code it uses, but the task type is declared with no options:
``@app.task("bench")``, so concurrency 16 and a 5 min timeout, what a user gets.
Worker: ``python -m adapters.duetime_default_peer``.
"""

from __future__ import annotations

from adapters import duetime_peer

DISTS = duetime_peer.DISTS

peer = duetime_peer.Peer()
app, open, schedule, schedule_bulk, close = (
    peer.app,
    peer.open,
    peer.schedule,
    peer.schedule_bulk,
    peer.close,
)

if __name__ == "__main__":
    app.run()
