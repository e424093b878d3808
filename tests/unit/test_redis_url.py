"""The URLs of one Redis server (stores/redis/resp/address.py): what each form names, and
a clear refusal, by name, of what cannot be used (the password never shown)."""

from __future__ import annotations

import pytest

import duetime
from duetime.stores.redis.resp.address import TLS, Endpoint, parse_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://", Endpoint()),
        ("redis://cache.internal", Endpoint(host="cache.internal")),
        ("redis://127.0.0.1:6380/3", Endpoint(port=6380, db=3)),
        ("redis://h:1/?db=4", Endpoint(host="h", port=1, db=4)),
        ("redis://:s%40cret@h", Endpoint(host="h", password="s@cret")),
        ("redis://app:pw@h/0", Endpoint(host="h", username="app", password="pw")),
        ("redis://h?password=pw&username=u", Endpoint(host="h", username="u", password="pw")),
        ("redis://[::1]:7000", Endpoint(host="::1", port=7000)),
        ("REDIS://H", Endpoint(host="h")),
        ("redis://h?socket_connect_timeout=0.5", Endpoint(host="h", connect_timeout=0.5)),
        ("redis://h?max_connections=7", Endpoint(host="h", max_connections=7)),
        ("unix:///run/redis.sock", Endpoint(path="/run/redis.sock")),
        ("unix://:pw@/run/redis.sock?db=2", Endpoint(path="/run/redis.sock", db=2, password="pw")),
        ("rediss://h", Endpoint(host="h", tls=TLS())),
        (
            "rediss://h?ssl_cert_reqs=none&ssl_check_hostname=false&ssl_ca_certs=/ca.pem",
            Endpoint(host="h", tls=TLS(cert_reqs="none", check_hostname=False, ca_certs="/ca.pem")),
        ),
        (
            "rediss://h?ssl_certfile=/c.pem&ssl_keyfile=/k.pem&ssl_ca_path=/certs",
            Endpoint(host="h", tls=TLS(certfile="/c.pem", keyfile="/k.pem", ca_path="/certs")),
        ),
    ],
)
def test_a_url_names_its_server(url: str, expected: Endpoint) -> None:
    assert parse_url(url) == expected


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("http://h", "redis://, rediss:// or unix://"),
        ("redis://h:99999", "bad Redis URL"),
        ("redis://h/zero", "number, not 'zero'"),
        ("redis://h?db=-1", "number, not '-1'"),
        ("redis://h?decode_responses=true", "unknown option 'decode_responses'"),
        ("redis://h?health_check_interval=10", "unknown option 'health_check_interval'"),
        ("redis://h?socket_connect_timeout=0", "socket_connect_timeout"),
        ("redis://h?socket_connect_timeout=nan", "socket_connect_timeout"),
        ("redis://h?max_connections=0", "max_connections is a whole number from 1"),
        ("redis://h?max_connections=many", "not 'many'"),
        ("redis://h?max_connections=10001", "1 to 10,000"),
        ("redis://h?ssl_cert_reqs=none", "need rediss://"),
        ("rediss://h?ssl_cert_reqs=maybe", "ssl_cert_reqs is one of none, optional, required"),
        ("rediss://h?ssl_check_hostname=perhaps", "true or false"),
        ("rediss://h?ssl_ciphers=x", "unknown TLS option 'ssl_ciphers'"),
        ("unix://", "names the socket"),
    ],
)
def test_a_url_that_cannot_be_used_is_refused_by_name(url: str, named: str) -> None:
    with pytest.raises(duetime.ConfigError, match=named):
        parse_url(url)


def test_a_refusal_never_shows_the_password() -> None:
    with pytest.raises(duetime.ConfigError) as caught:
        parse_url("redis://app:hunter2@h/zero?db=x")
    assert "hunter2" not in str(caught.value)
