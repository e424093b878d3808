"""duetime: run work at the moment it is due, on Redis or SQLite, never lost, on time."""

from __future__ import annotations

from duetime.app import App
from duetime.clock import Clock, ManualClock, StoreClock, SystemClock
from duetime.errors import (
    Abort,
    ConfigError,
    DuetimeError,
    NotFound,
    PayloadError,
    Retry,
    ScheduleNotFound,
    SchemaError,
    ScriptError,
    StoreError,
    StoreUnavailable,
    TaskNotFound,
    UnknownTaskType,
    ValidationError,
)
from duetime.merge import deep_merge
from duetime.model import Backoff, Context, Pacing, Reschedule, Task, TaskInfo, TaskPolicy
from duetime.schedules import CronInfo
from duetime.sync import SyncClient
from duetime.tasktype import TaskType
from duetime.worker import Worker

__version__ = "0.1.0"

__all__ = [
    "Abort",
    "App",
    "Backoff",
    "Clock",
    "ConfigError",
    "CronInfo",
    "Context",
    "DuetimeError",
    "ManualClock",
    "NotFound",
    "Pacing",
    "PayloadError",
    "Reschedule",
    "Retry",
    "ScheduleNotFound",
    "SchemaError",
    "ScriptError",
    "StoreClock",
    "StoreError",
    "StoreUnavailable",
    "SyncClient",
    "SystemClock",
    "Task",
    "TaskInfo",
    "TaskNotFound",
    "TaskPolicy",
    "TaskType",
    "UnknownTaskType",
    "ValidationError",
    "Worker",
    "__version__",
    "deep_merge",
]
