"""Scheduling from blocking code (a script, a cron job, a Flask or Django view) with
``app.sync()``: the same calls as the async App, each returning when the store has it.

Run it with ``python examples/sync_script.py``; it uses the SQLite file ``duetime.db`` in
the working directory (or ``DUETIME_URL``). The worker that runs the reports is a separate
process with the handlers' code (``duetime worker myproject.tasks:app``); this script only
produces, so it declares the type instead of registering a handler.
"""

from __future__ import annotations

import sys
from datetime import timedelta

import duetime

app = duetime.App()  # DUETIME_URL, or sqlite:///duetime.db
app.declare("report")  # scheduled here, run elsewhere: a typo in the name still fails here


def main(customers: list[str]) -> None:
    # One client for the script's life: it runs its own event loop in a thread, so that
    # any thread may call it; `with` closes it (and its connection) at the end.
    with app.sync() as client:
        for customer in customers:
            due = client.schedule(
                "report",
                f"monthly-{customer}",  # the same id again moves the task: safe to rerun
                delay=timedelta(minutes=5),
                payload={"customer": customer},
            )
            print(f"report for {customer} due at {due:%H:%M:%S}")
        info = client.get("report", f"monthly-{customers[0]}")
        assert info is not None
        print(f"{info.task_id}: {info.state}, payload {info.payload}")
        client.cancel("report", f"monthly-{customers[-1]}")
        print(f"counts: {client.counts('report')}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["acme", "globex", "initech"])
