"""bench/ab.py's timed workloads: W1 (one ``schedule`` call per task), W2 (a worker
process runs N due tasks) and W3 (the lateness of tasks spread over some seconds), each
timed by the clock, so that a run worth quoting is one on a quiet machine."""

from __future__ import annotations

import statistics
import time
from typing import Any

from ab_build import Build


class TimedWorkloads:
    """W1, W2 and W3, as methods of bench/ab_workloads.py's Bench (whose stores, agent and
    worker they use)."""

    def w1(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        server = self.server_from_zero(store)
        n = self.sizes.w1
        figures = {"w1_per_s": self.agent(b, "w1", self.url(store, ns), ns, n)["per_s"]}
        if server is not None:  # with the agent's start: a few calls in 20,000
            figures["w1_server_us_per_call"] = server.spent_us() / n
        return figures

    def w1m(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        """W1m: one ``if_exists="merge"`` call per task, into a pending task (its merge made
        in the store, or read and written again by the caller in builds before it)."""
        n = self.sizes.w1 // 4  # merges cost more than a plain call: a quarter of W1's
        return {"w1m_per_s": self.agent(b, "w1m", self.url(store, ns), ns, n)["per_s"]}

    def w2(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        n, url = self.sizes.w2, self.url(store, ns)
        options = self.seed(b, url, ns, n, options)
        server = self.server_from_zero(store)
        worker = self.start_worker(b, url, ns, n, options)
        t_start = time.time()
        data = self.finish(worker, 600)
        spent = server.spent_us() if server is not None else None
        times = [s[0] for s in data["samples"]]
        first, last = min(times), max(times)
        (u0, s0), (u1, s1) = data["cpu"][0], data["cpu"][-1]
        per_task = 1e6 / max(n - 1, 1)
        return {
            "w2_start_to_last_per_s": n / (last - t_start),
            "w2_first_to_last_per_s": n / (last - first) if last > first else float("inf"),
            "w2_startup_s": first - t_start,
            "w2_cpu_us_per_task": (u1 - u0 + s1 - s0) * per_task,
            "w2_cpu_user_us_per_task": (u1 - u0) * per_task,
            "w2_cpu_system_us_per_task": (s1 - s0) * per_task,
            # The claims' and settles' time in Redis, with the worker's start and end.
            **({"w2_server_us_per_task": spent / n} if spent is not None else {}),
        }

    def w3(self, b: Build, store: str, ns: str, options: dict[str, Any]) -> dict[str, float]:
        s, url = self.sizes, self.url(store, ns)
        worker = self.start_worker(b, url, ns, s.w3, options)
        self.ready(worker, 60)
        produced = self.agent(b, "spread", url, ns, s.w3, s.w3_spread, s.w3_lead)
        data = self.finish(worker, s.w3_spread + s.w3_lead + 60)
        late = sorted((t - due) * 1000 for t, due in data["samples"])
        return {
            "w3_p50_ms": statistics.median(late),
            "w3_p99_ms": late[max(int(len(late) * 0.99) - 1, 0)],
            "w3_max_ms": late[-1],
            # Above 0, the producer scheduled some task after it was due.
            "w3_producer_overran_s": produced["overran_s"],
        }
