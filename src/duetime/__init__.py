"""duetime: run work at the moment it is due, on Redis or SQLite, never lost, on time."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duetime._lazy import lazy_names
from duetime.app import App
from duetime.calls.aborts import AbortStatus
from duetime.client import Client
from duetime.clock import Clock, ManualClock, StoreClock, SystemClock
from duetime.context import Context
from duetime.errors import (
    Abort,
    BulkIncomplete,
    ClientClosed,
    ConfigError,
    DuetimeError,
    DuplicateTaskNameError,
    InvalidTaskConfigurationError,
    InvalidTaskConfigurationNameError,
    LeaseLost,
    NotFound,
    PayloadError,
    RateLimited,
    Retry,
    ScheduleNotFound,
    SchemaError,
    ScriptError,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    TaskFailed,
    TaskNotFound,
    UnexpectedTaskInstructionsError,
    UnknownTaskType,
    ValidationError,
)
from duetime.events import Listener, WorkerEvent
from duetime.middleware import Middleware
from duetime.model import Backoff, History, Pacing, Reschedule, Task, TaskInfo, TaskPolicy
from duetime.tasktype import TaskType
from duetime.version import VERSION

if TYPE_CHECKING:
    from duetime.features.cron.manage import CronInfo
    from duetime.features.expiring.group import ExpiringGroup
    from duetime.features.history.runs import RunInfo
    from duetime.features.pollers.events import ErrorEvent, PollerEvents, TaskEvent
    from duetime.features.pollers.poller import PollContext, Poller
    from duetime.features.telemetry import MinuteCounts, TypeHistory, WorkerInfo
    from duetime.interval import CalendarInterval
    from duetime.rate import Rate
    from duetime.sync import SyncClient
    from duetime.triggers.periodic import deep_merge
    from duetime.worker import Worker

#: The public names whose modules are imported when a name is first used: what an app
#: that uses none of their features never needs (``import duetime`` stays quick).
_LAZY = {
    "CronInfo": "duetime.features.cron.manage",
    "ExpiringGroup": "duetime.features.expiring.group",
    "RunInfo": "duetime.features.history.runs",
    "ErrorEvent": "duetime.features.pollers.events",
    "PollerEvents": "duetime.features.pollers.events",
    "TaskEvent": "duetime.features.pollers.events",
    "PollContext": "duetime.features.pollers.poller",
    "Poller": "duetime.features.pollers.poller",
    "MinuteCounts": "duetime.features.telemetry.history",
    "TypeHistory": "duetime.features.telemetry.history",
    "WorkerInfo": "duetime.features.telemetry.presence",
    "CalendarInterval": "duetime.interval",
    "Rate": "duetime.rate",
    "SyncClient": "duetime.sync",
    "deep_merge": "duetime.triggers.periodic",
    "Worker": "duetime.worker",  # a producer runs none
}


__getattr__ = lazy_names(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(__all__)


__version__ = VERSION

__all__ = [
    "Abort",
    "AbortStatus",
    "App",
    "Backoff",
    "BulkIncomplete",
    "CalendarInterval",
    "Client",
    "ClientClosed",
    "Clock",
    "ConfigError",
    "Context",
    "CronInfo",
    "DuetimeError",
    "DuplicateTaskNameError",
    "ErrorEvent",
    "History",
    "ExpiringGroup",
    "InvalidTaskConfigurationError",
    "InvalidTaskConfigurationNameError",
    "LeaseLost",
    "Listener",
    "MinuteCounts",
    "ManualClock",
    "Middleware",
    "NotFound",
    "Pacing",
    "PayloadError",
    "PollContext",
    "Poller",
    "PollerEvents",
    "Rate",
    "RateLimited",
    "Reschedule",
    "Retry",
    "RunInfo",
    "ScheduleNotFound",
    "SchemaError",
    "ScriptError",
    "StoreClock",
    "StoreError",
    "StoreRefused",
    "StoreUnavailable",
    "SyncClient",
    "SystemClock",
    "Task",
    "TaskEvent",
    "TaskInfo",
    "TypeHistory",
    "TaskFailed",
    "TaskNotFound",
    "TaskPolicy",
    "TaskType",
    "UnexpectedTaskInstructionsError",
    "UnknownTaskType",
    "ValidationError",
    "Worker",
    "WorkerEvent",
    "WorkerInfo",
    "deep_merge",
    "__version__",
]
