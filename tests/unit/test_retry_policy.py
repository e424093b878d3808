"""One retry policy on every Redis topology: the Cluster's client (redis-py's, and the
script runner on it) tries as often, and waits between tries as long, as duetime's own
client does on one server and behind Sentinel."""

from __future__ import annotations

from duetime.stores.redis import cluster
from duetime.stores.redis.resp import client


def test_the_clusters_client_retries_as_duetimes_own_does() -> None:
    redis_cluster = cluster.connect_cluster("redis+cluster://127.0.0.1:7000")
    retry = redis_cluster.retry
    assert retry is not None
    assert retry.get_retries() == cluster.CLUSTER_RETRIES == client.SEND_TRIES
    backoff = retry._backoff  # redis-py keeps its backoff here
    assert (backoff._base, backoff._cap) == (
        client.RETRY_FIRST_SECONDS,
        client.RETRY_CAP_SECONDS,
    )
    # Its waits stay within duetime's own bounds at every try.
    for attempt in range(1, client.SEND_TRIES + 1):
        assert 0 <= backoff.compute(attempt) <= client.RETRY_CAP_SECONDS
