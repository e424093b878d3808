"""bench/ab.py's counted workloads (bench/ab_count.py): W1i and W2i count what duetime's
producer and worker processes execute, under callgrind, and W2s what the Redis server
executes for W2's worker (a redis-server of its own under callgrind), per call or task at
two sizes; the same for a build however busy the machine is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ab_build import Build
from ab_count import CountedRedis, per_unit


class CountedWorkloads:
    """W1i, W2i and W2s, as methods of bench/ab_workloads.py's Bench (whose stores, agent
    and worker they use)."""

    def w1i(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        """The producer's instructions per ``schedule`` call, counted (W1 at two sizes)."""

        def count(url: str, at: str, n: int) -> int:
            return self.counted_agent(b, "w1", url, at, n)

        each, rest = self.at_two_sizes(store, ns, self.sizes.w1i, count)
        return {"w1_instructions_per_call": each, "w1_start_instructions": rest}

    def w2i(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        """The worker's instructions per task, counted (W2 at two sizes)."""

        def count(url: str, at: str, n: int) -> int:
            type_options = self.seed(b, url, at, n, options)
            worker = self.start_worker(b, url, at, n, type_options, counted=True)
            return int(self.finish(worker, 1800)["instructions"])

        each, rest = self.at_two_sizes(store, ns, self.sizes.w2i, count)
        return {"w2_instructions_per_task": each, "w2_start_instructions": rest}

    def w2s(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        """The Redis server's instructions per W2 task (claims, settles, and what else the
        worker sends meanwhile), counted on a redis-server of its own under callgrind, from
        just after the seed to the worker's end."""
        if store != "redis":
            return {}  # the SQL stores' work is the worker's own: W2i counts it
        if self.counted_redis is None:
            self.counted_redis = CountedRedis(self.tmp)
        server = self.counted_redis

        def count(url: str, at: str, n: int) -> int:
            type_options = self.seed(b, url, at, n, options)
            server.zero()
            worker = self.start_worker(b, url, at, n, type_options, quiet=True)
            self.finish(worker, 1800)
            return server.counted()

        each, rest = self.at_two_sizes(store, ns, self.sizes.w2i, count, url=server.url)
        return {"w2_server_instructions_per_task": each, "w2_server_rest_instructions": rest}

    def at_two_sizes(
        self,
        store: str,
        ns: str,
        sizes: tuple[int, int],
        count: Callable[[str, str, int], int],
        url: str | None = None,
    ) -> tuple[float, float]:
        """A counted workload's instructions per unit and its start's (:func:`per_unit`):
        ``count(url, namespace, n)`` at each size, in a namespace of its own, each from an
        empty store (the run's, or the Redis at ``url``)."""

        def at_size(n: int) -> int:
            at = f"{ns}n{n}"
            try:
                return count(url or self.url(store, at), at, n)
            finally:
                self.clean(store, at, url)

        return per_unit(at_size, *sizes)
