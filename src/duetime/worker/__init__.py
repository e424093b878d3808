"""Running tasks: the worker, its claim loops, executor, outbox, leases, events and runtime."""

from __future__ import annotations

from duetime.events import Listener, WorkerEvent
from duetime.worker.worker import Worker

__all__ = ["Listener", "WorkerEvent", "Worker"]
