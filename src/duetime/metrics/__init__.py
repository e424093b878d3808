"""Prometheus metrics of workers and of the store; needs ``pip install 'duetime[metrics]'``.

A worker started with ``metrics_port`` serves them itself (:class:`WorkerMetrics`);
:class:`MetricsListener` and :class:`StoreGauges` serve your own registry or endpoint.
"""

from __future__ import annotations

try:
    import prometheus_client  # noqa: F401
except ImportError as exc:  # pragma: no cover - tested in a subprocess
    raise ImportError(
        "duetime's Prometheus metrics need prometheus-client: pip install 'duetime[metrics]'"
    ) from exc

from duetime.metrics.listener import DURATION_BUCKETS, LATENESS_BUCKETS, MetricsListener
from duetime.metrics.server import WorkerMetrics
from duetime.metrics.store import DEFAULT_CACHE_SECONDS, StoreGauges, store_metrics

__all__ = [
    "DEFAULT_CACHE_SECONDS",
    "DURATION_BUCKETS",
    "LATENESS_BUCKETS",
    "MetricsListener",
    "StoreGauges",
    "WorkerMetrics",
    "store_metrics",
]
