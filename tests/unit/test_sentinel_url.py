"""The redis+sentinel:// URL, and durability a store cannot give."""

from __future__ import annotations

import pytest

import duetime
from duetime.stores import open_store, redact
from duetime.stores.redis.sentinel import SentinelURL, parse_sentinel_url


def test_a_sentinel_url_names_the_sentinels_the_service_and_the_database() -> None:
    found = parse_sentinel_url("redis+sentinel://:s3cret@sentinel-a:26380,sentinel-b/mymaster/2")
    assert found == SentinelURL(
        (("sentinel-a", 26380), ("sentinel-b", 26379)), "mymaster", 2, None, "s3cret"
    )
    tls = parse_sentinel_url("rediss+sentinel://app:pw@[::1]:26379/cache?sentinel_password=other")
    assert (tls.sentinels, tls.service, tls.db) == ((("::1", 26379),), "cache", 0)
    assert (tls.username, tls.password, tls.sentinel_password, tls.tls) == (
        "app",
        "pw",
        "other",
        True,
    )
    assert redact("redis+sentinel://:s3cret@a:1,b:2/m/0") == "redis+sentinel://:***@a:1,b:2/m/0"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis+sentinel:///mymaster", "at least one sentinel"),
        ("redis+sentinel://a:26379", "/<service name>"),
        ("redis+sentinel://a:26379/m/0/extra", "/<service name>"),
        ("redis+sentinel://a:26379/m/zero", "is a number"),
        ("redis+sentinel://a:port/m", "host:port"),
    ],
)
def test_a_bad_sentinel_url_says_what_is_wrong(url: str, problem: str) -> None:
    with pytest.raises(duetime.ConfigError, match=problem):
        parse_sentinel_url(url)


def test_replicated_durability_needs_a_store_with_replicas(tmp_path: object) -> None:
    with pytest.raises(duetime.ConfigError, match="needs a store with replicas"):
        open_store("sqlite:///x.db", namespace="n", durability="replicated")
    with pytest.raises(duetime.ValidationError, match="durability"):
        duetime.App("sqlite:///x.db", durability="quorum")  # type: ignore[arg-type]
    app = duetime.App("redis+sentinel://a:26379/m/0", durability="replicated")
    assert app.durability == "replicated"
