"""A worker process for the ``immediately`` tests: a yearly schedule that runs once when it
is first written, writing a ledger.

python -m tests.integration.immediate_worker URL NAMESPACE LEDGER
"""

from __future__ import annotations

import logging
import os
import sys

import duetime


def main() -> None:
    url, namespace, ledger = sys.argv[1:4]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    app = duetime.App(url, namespace=namespace)
    fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    @app.cron("0 0 1 1 *", name="kickoff", immediately=True)
    async def kickoff(ctx: duetime.Context) -> None:
        # One write per run, O_APPEND: lines from several processes never interleave.
        os.write(fd, f"{ctx.occurrence} {os.getpid()} {ctx.attempt}\n".encode())

    app.run(grace=5)


if __name__ == "__main__":
    main()
