"""How a loop that outlives failures of its store logs them: a warning when they begin, one
line per interval while they go on, and one line when the store answers again."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from duetime.errors import StoreError

#: Seconds between two warnings of one subsystem while its store keeps failing: the
#: failures in between are counted, and the next warning says how many there were.
REPORT_SECONDS = 10.0


class OutageLog:
    """The log of one subsystem's failures of the store (a worker's claims of one type, its
    settles, its lease renewals, its heartbeat, its wake-up listener...).

    The first failure after a success logs a warning (a failure that is not a
    :class:`~duetime.errors.StoreError` is a bug, logged as an error with its traceback);
    the failures in the next :data:`REPORT_SECONDS` are only counted, and the first one
    after that logs again, saying how many were not shown. The first success after
    failures logs once at INFO that the store is reachable again, and after how long.

    Each loop (or each worker, for loops it runs several of) makes its own: nothing is
    shared between workers or apps.

    Args:
        subsystem: what failed, as the lines begin: ``"claims of mail"``, ``"settles"``.
        logger: the logger of the module whose loop it is.
        interval: seconds between two warnings while failures go on.
        clock: monotonic seconds (a test may pass its own).
    """

    __slots__ = ("_clock", "_log", "_reported", "_since", "_unreported", "interval", "subsystem")

    def __init__(
        self,
        subsystem: str,
        logger: logging.Logger,
        *,
        interval: float = REPORT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.subsystem = subsystem
        self.interval = interval
        self._log = logger
        self._clock = clock
        self._since: float | None = None  # when the failures began; None: no failure now
        self._reported = 0.0  # when the last line was logged
        self._unreported = 0  # failures since then, not logged

    @property
    def failing(self) -> bool:
        """Whether the last try failed."""
        return self._since is not None

    def failed(
        self, exc: BaseException, message: str, *args: object, expected: bool = False
    ) -> None:
        """Note a failure: ``message % args`` says what failed (the subsystem is put first);
        logged unless one was logged less than ``interval`` seconds ago. A failure that is
        not a StoreError is logged as a bug unless ``expected`` (a driver's error that a
        store's own loop catches)."""
        now = self._clock()
        if self._since is None:
            self._since = self._reported = now
            self._unreported = 0
            self._emit(exc, expected, message, args)
            return
        if now - self._reported < self.interval:
            self._unreported += 1
            return
        note = (
            f" (failing for {now - self._since:.1f} s; {self._unreported} more failures "
            f"in the last {now - self._reported:.1f} s not shown)"
        )
        self._reported, self._unreported = now, 0
        self._emit(exc, expected, message + "%s", (*args, note), trace=False)

    def ok(self) -> None:
        """Note a success: after failures, say once that the store is reachable again.
        Cheap when nothing failed (it is called on every success)."""
        if self._since is None:
            return
        took = self._clock() - self._since
        self._since = None
        self._log.info("%s: store reachable again after %.1f s", self.subsystem, took)

    def _emit(
        self,
        exc: BaseException,
        expected: bool,
        message: str,
        args: tuple[object, ...],
        *,
        trace: bool = True,
    ) -> None:
        if expected or isinstance(exc, StoreError):
            self._log.warning("%s: " + message, self.subsystem, *args)
        else:
            self._log.error(
                "%s: " + message, self.subsystem, *args, exc_info=exc if trace else None
            )
