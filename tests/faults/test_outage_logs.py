"""A Redis outage as the worker's log tells it: a redis-server stopped for several seconds and
started again on its port. Each subsystem that meets the outage warns when it begins and at
most once per interval while it lasts, then says once that the store is reachable again."""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

import duetime
from duetime._outage import REPORT_SECONDS
from tests.helpers import eventually, is_gone, running
from tests.servers import RedisServer

#: How long the store stays down once the worker has noticed: long enough for a subsystem
#: that tries every few seconds to fail again and again.
DOWN_SECONDS = 6.0
BACK = re.compile(r"^(.+): store reachable again after (\d+\.\d) s$")


@pytest.mark.slow
async def test_an_outage_is_logged_once_per_subsystem_and_interval_and_its_end_once(
    namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "duetime")
    with RedisServer() as server:
        app = duetime.App(server.url, namespace=namespace)
        ran: list[str] = []

        # An idle worker that looks every 100 ms: its claims meet the outage at once.
        @app.task("mail", pacing=duetime.Pacing(max_idle=timedelta(milliseconds=100)))
        async def mail(payload: dict[str, Any], ctx: duetime.Context) -> None:
            ran.append(ctx.task_id)

        since = 0  # the records from the outage on

        def warned(subsystem: str | None = None) -> list[str]:
            return [
                r.getMessage()
                for r in caplog.records[since:]
                if r.levelno >= logging.WARNING
                and (subsystem is None or r.getMessage().startswith(subsystem + ": "))
            ]

        def back() -> Counter[str]:
            found = (BACK.match(r.getMessage()) for r in caplog.records[since:])
            return Counter(m.group(1) for m in found if m is not None)

        def all_back() -> bool:
            """Every subsystem that warned said it is back (the heartbeat tries every 5 s)."""
            failing = {line.split(": ", 1)[0] for line in warned()}
            return {"claims of mail", "wake-up channel"} <= failing <= set(back())

        try:
            async with running(app):
                since = len(caplog.records)
                await asyncio.to_thread(server.stop)
                await eventually(lambda: bool(warned("claims of mail")), 30, "claims failing")
                await asyncio.sleep(DOWN_SECONDS)
                await asyncio.to_thread(server.start)
                await eventually(all_back, 30, "every subsystem back")
                # And it works: a task scheduled now runs.
                await app.schedule("mail", "after")
                await eventually(lambda: is_gone(app, "mail", "after"), 10, "the task ran")
                await asyncio.sleep(0.5)  # any late line of the outage has come by now
        finally:
            await app.close()

    assert ran == ["after"]
    lines = back()
    # Each subsystem that failed says once that the store is back.
    assert set(lines.values()) == {1}, lines
    # Every warning of the outage came from one of them: the first failure, then one line
    # per REPORT_SECONDS at most.
    assert {line.split(": ", 1)[0] for line in warned()} == set(lines), warned()
    most = 1 + int((DOWN_SECONDS + 10) / REPORT_SECONDS)
    for subsystem in lines:
        assert 1 <= len(warned(subsystem)) <= most, warned(subsystem)
