"""Results: what a handler returns, kept with its run in the run history (the worker's
side is :mod:`duetime.worker.results`); the App's calls that read it back
(:mod:`.calls`), and the wait for a run to finish (:mod:`.wait`)."""

from __future__ import annotations

from duetime.features.results.calls import ResultCalls

__all__ = ["ResultCalls"]
