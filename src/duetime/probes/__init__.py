"""What a process supervisor, Kubernetes or Prometheus asks of a running worker over HTTP:
the small server on the worker's loop (:mod:`.endpoint`) and the health checks
(:mod:`.health`); the metrics' routes are :mod:`duetime.metrics`'."""
