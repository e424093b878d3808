"""How redis-py's connections (Redis Cluster's client only, :mod:`.cluster`) name
themselves. On one server and behind Sentinel every call goes through duetime's own client
(:mod:`.resp`), and redis-py is not loaded."""

from __future__ import annotations

import redis
from redis.driver_info import DriverInfo

from duetime.version import VERSION


def driver_info() -> DriverInfo:
    """How redis-py's connections name themselves to the server (``CLIENT SETINFO``, seen
    in ``CLIENT LIST`` as ``lib-name=redis-py(duetime_v<version>)``). Given, it also spares
    every new connection redis-py's own look-up of its version in the installed
    packages' metadata, a few milliseconds each."""
    return DriverInfo(lib_version=redis.__version__).add_upstream_driver("duetime", VERSION)
