"""A task without a trigger: it runs once, and goes to the dead letters once out of retries."""

from __future__ import annotations

from duetime.stores.base import Outcome
from duetime.triggers.base import Job


async def run_once(job: Job) -> Outcome:
    """Run a one-off task: its handler, for the occurrence it was claimed for."""
    occurrence = job.occurrence_ms
    error = await job.call(occurrence)
    if error is None:
        return job.done()
    return await job.failed(error, occurrence, None, None)
