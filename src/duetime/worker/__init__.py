"""Running tasks: the worker, its claim loops, executor, outbox, leases, events and runtime."""

from __future__ import annotations

from duetime.events import Listener, WorkerEvent
from duetime.worker.burst import Burst
from duetime.worker.worker import Worker

__all__ = ["Burst", "Listener", "WorkerEvent", "Worker"]
