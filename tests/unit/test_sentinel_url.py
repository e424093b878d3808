"""The redis+sentinel:// URL, and durability a store cannot give."""

from __future__ import annotations

import pytest

import duetime
from duetime.stores import open_store, redact
from duetime.stores.redis.resp.address import TLS
from duetime.stores.redis.sentinel import SentinelURL, parse_sentinel_url
from duetime.stores.redis.topology import parse_cluster_url


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
        TLS(),
    )
    assert redact("redis+sentinel://:s3cret@a:1,b:2/m/0") == "redis+sentinel://:***@a:1,b:2/m/0"


def test_the_data_nodes_and_the_sentinels_take_tls_and_credentials_of_their_own() -> None:
    found = parse_sentinel_url(
        "rediss+sentinel://app:pw@s1:26379,s2:26380/mymaster/1?ssl_ca_certs=/ca.pem"
        "&ssl_certfile=/c.pem&ssl_keyfile=/k.pem&socket_connect_timeout=2"
        "&sentinel_username=watcher&sentinel_password=s%40cret&sentinel_ssl=true"
        "&sentinel_ssl_ca_certs=/sca.pem&sentinel_ssl_cert_reqs=none"
        "&sentinel_ssl_check_hostname=false"
    )
    assert found == SentinelURL(
        (("s1", 26379), ("s2", 26380)),
        "mymaster",
        1,
        "app",
        "pw",
        "s@cret",
        TLS(ca_certs="/ca.pem", certfile="/c.pem", keyfile="/k.pem"),
        "watcher",
        TLS(cert_reqs="none", ca_certs="/sca.pem", check_hostname=False),
        2.0,
    )
    plain = parse_sentinel_url("redis+sentinel://s1/m?db=3&sentinel_ssl=false")
    assert (plain.db, plain.tls, plain.sentinel_tls) == (3, None, None)


def test_a_cluster_url_takes_the_plain_urls_options() -> None:
    nodes, options = parse_cluster_url(
        "rediss+cluster://u:p@a:7000,b:7001?ssl_ca_certs=/ca.pem&socket_connect_timeout=1.5"
    )
    assert nodes == [("a", 7000), ("b", 7001)]
    assert options["ssl"] and options["ssl_ca_certs"] == "/ca.pem"
    assert (options["username"], options["password"]) == ("u", "p")
    assert options["socket_connect_timeout"] == 1.5
    with pytest.raises(duetime.ConfigError, match="unknown option 'decode_responses'"):
        parse_cluster_url("redis+cluster://a:7000?decode_responses=true")
    with pytest.raises(duetime.ConfigError, match="unknown option 'db'"):
        parse_cluster_url("redis+cluster://a:7000?db=1")
    with pytest.raises(duetime.ConfigError, match="need rediss\\+cluster://"):
        parse_cluster_url("redis+cluster://a:7000?ssl_ca_certs=/ca.pem")


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis+sentinel://a/m?decode_responses=true", "unknown option 'decode_responses'"),
        ("redis+sentinel://a/m?sentinel_db=1", "unknown option 'sentinel_db'"),
        ("redis+sentinel://a/m?sentinel_timeout=1", "unknown option 'sentinel_timeout'"),
        ("redis+sentinel://a/m?ssl_ca_certs=/ca.pem", "need rediss\\+sentinel://"),
        ("redis+sentinel://a/m?sentinel_ssl_ca_certs=/ca.pem", "need sentinel_ssl=true"),
        ("redis+sentinel://a/m?sentinel_ssl=maybe", "sentinel_ssl is true or false"),
        ("rediss+sentinel://a/m?sentinel_ssl=1&sentinel_ssl_ciphers=x", "'sentinel_ssl_ciphers'"),
        ("redis+sentinel://a/m?sentinel_ssl=1&sentinel_ssl_cert_reqs=no", "sentinel_ssl_cert_"),
        ("redis+sentinel://a/m?db=x", "is a number"),
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
