"""A producer process for the kill test: schedules a task in its transaction, says so in a
file, and hangs with the transaction open (the test kills it then).

python -m tests.integration.postgres.tx_producer URL DSN SIGNAL
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import psycopg

import duetime


def main() -> None:
    url, dsn, signal = sys.argv[1:4]
    app = duetime.App(url, namespace="tx")
    app.declare("mail")
    with app.sync() as client, psycopg.connect(dsn) as conn, conn.transaction():
        client.schedule("mail", "killed", connection=conn)
        Path(signal).write_text("scheduled\n")
        time.sleep(3600)  # killed here, the transaction open


if __name__ == "__main__":
    main()
