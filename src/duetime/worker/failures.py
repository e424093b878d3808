"""How a worker outlives failures of its store: the log line, and the wait before trying again."""

from __future__ import annotations

import logging

from duetime._backoff import backoff_delay
from duetime.errors import StoreError

log = logging.getLogger(__name__)

#: Back-off after a store error: first wait, and the cap.
ERROR_BACKOFF_FIRST = 0.05
ERROR_BACKOFF_CAP = 5.0


def log_store_failure(exc: Exception, message: str, *args: object) -> None:
    """A store error is expected now and then (logged without a trace); anything else is a
    bug, logged with its traceback, but it still does not stop the worker."""
    if isinstance(exc, StoreError):
        log.warning(message, *args)
    else:
        log.exception(message, *args)


def store_backoff(failures: int) -> float:
    """Seconds to wait after ``failures`` failures in a row of the store."""
    return backoff_delay(failures, ERROR_BACKOFF_FIRST, ERROR_BACKOFF_CAP)
