"""The expiring trigger kind: an entry, handed off at its expiry to be handled on its own.

An entry is a task of its group's type whose id is the key, due at its expiry, with the
payload ``{"key": <key>, "value": <value>}`` and the record field ``"x"``. Claimed at its
expiry, it leaves the key and becomes the task ``"<key>@<expiry ms>"``, in one settle: the
group's handler runs under that id, with the group's retries, so a later ``put`` of the key
(a new entry) never meets the previous value's run. ``Store.put_entry`` moves an entry that
expired before any worker claimed it aside to the same id, as it is: this kind then runs
the handler directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from duetime.errors import SchemaError
from duetime.stores.base import Outcome
from duetime.triggers.base import Job
from duetime.triggers.once import run_once


@dataclass(frozen=True, slots=True)
class Expiring:
    """The mark of an expiring entry's record (it carries no state of its own)."""

    KEY: ClassVar[str] = "x"
    NAME: ClassVar[str] = "expiring"

    @classmethod
    def from_record(cls, doc: dict[str, Any]) -> Expiring:
        if doc.get(cls.KEY) != 1:
            raise SchemaError("field 'x' of the record is not 1")
        return EXPIRING

    def fields(self) -> str:
        return ',"x":1'

    def shown(self) -> dict[str, Any]:
        return {}

    async def run(self, job: Job) -> Outcome:
        key = job.payload.get("key")
        if not isinstance(key, str) or "value" not in job.payload:
            raise SchemaError("an expiring entry's payload is not {key, value}")
        if job.claim.id == key:  # the entry itself, at its expiry: hand it off
            return job.done(None, hand_off_ms=job.occurrence_ms)
        return await run_once(job)  # an expiry moved aside by a put: handle it


EXPIRING = Expiring()
