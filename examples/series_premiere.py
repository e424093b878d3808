"""Remind subscribers, every week, that a series is coming: the example of the Redis
sorted-set scheduler whose API duetime keeps compatible in spirit.

Run it with ``make demo`` (or ``python examples/series_premiere.py``). It uses the embedded
default store, a SQLite file ``duetime.db`` in the working directory, so it needs no server;
set ``DUETIME_URL=redis://localhost:6379/0`` to run it on Redis instead. To keep the demo
short a "week" here lasts one second.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import duetime

WEEK = timedelta(seconds=1)  # a real app would use timedelta(days=7)

app = duetime.App()  # DUETIME_URL, or sqlite:///duetime.db


@app.task("sendSeriesStartsEmail", concurrency=16, timeout=30, retries=3)
async def send_series_starts_email(payload: dict[str, Any], ctx: duetime.Context) -> None:
    weeks_left = payload["weeksLeft"]
    for email in payload["emails"]:
        print(f"  to {email}: {payload['seriesName']} starts in {weeks_left} week(s)")
    print(f"  ({ctx.task_id}, occurrence {ctx.occurrence}, attempt {ctx.attempt})")


@send_series_starts_email.reschedule
def still_before_premiere(payload: dict[str, Any]) -> duetime.Reschedule | bool:
    """That scheduler's checkBeforeReschedule: go on until the premiere week."""
    if payload["weeksLeft"] <= 1:
        return False
    # Deep-merged into the stored payload: the emails list and the name are kept.
    return duetime.Reschedule(payload={"weeksLeft": payload["weeksLeft"] - 1})


@app.task("welcome", retries=2, backoff=duetime.Backoff(base=timedelta(milliseconds=200)))
async def welcome(payload: dict[str, Any], ctx: duetime.Context) -> None:
    if ctx.attempt == 1:
        raise ConnectionError("mail server busy")  # the retry will succeed
    print(f"  welcome mail to {payload['email']} (attempt {ctx.attempt})")


async def main() -> None:
    async with app:
        await app.schedule(
            "sendSeriesStartsEmail",
            "StrangerThings",
            delay=timedelta(milliseconds=200),
            payload={
                "seriesName": "Stranger Things",
                "weeksLeft": 3,
                "emails": ["eleven@hawkins.example", "dustin@hawkins.example"],
            },
            every=WEEK,
            until=datetime.now(UTC) + 10 * WEEK,
        )
        await app.schedule("welcome", "user-42", payload={"email": "new@example.com"})

        worker = app.worker()
        running = asyncio.create_task(worker.run())
        for _ in range(50):  # until the series ended and the welcome mail went out
            await asyncio.sleep(0.1)
            if not await app.get("sendSeriesStartsEmail", "StrangerThings") and not (
                await app.get("welcome", "user-42")
            ):
                break
        worker.stop()
        await running
        print("done: nothing left due:", await app.counts("sendSeriesStartsEmail"))


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(main())
