"""Flow control as workers see it: nothing to start and no listener, since the gates live in
the store and every claim reads them; what the feature needs is a store that keeps them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from duetime.features.base import Feature
from duetime.stores.capabilities import GATES, Capability


class FlowFeature(Feature):
    """Pause and resume of task types across every worker (``app.pause``), and the holds a
    handler's RateLimited leaves; a type's rate and global concurrency come with its
    claims (``TaskType.gate``)."""

    def needs(self) -> Sequence[tuple[Capability[Any], str]]:
        return [(GATES, "pause, resume and RateLimited")]
