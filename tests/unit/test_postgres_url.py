"""The postgresql:// URL: duetime's options are read, the rest goes to libpq."""

from __future__ import annotations

import pytest

from duetime.errors import ConfigError
from duetime.stores import open_store
from duetime.stores.postgres.config import parse_postgres_url
from duetime.stores.postgres.store import PostgresStore


def test_defaults_and_options() -> None:
    config = parse_postgres_url("postgresql://u:pw@db:5433/app", namespace="n")
    assert (config.schema, config.pool_size, config.namespace) == ("duetime", 10, "n")
    keepalives = "keepalives=1&keepalives_idle=10&keepalives_interval=5&keepalives_count=3"
    assert config.conninfo == f"postgresql://u:pw@db:5433/app?connect_timeout=5&{keepalives}"
    assert "pw" not in config.shown
    other = parse_postgres_url(
        "postgres://db/app?sslmode=require&schema=jobs&pool_size=4&connect_timeout=2",
        namespace="n",
    )
    assert (other.schema, other.pool_size) == ("jobs", 4)
    assert other.conninfo == f"postgres://db/app?sslmode=require&connect_timeout=2&{keepalives}"


def test_channels_differ_by_schema_and_namespace() -> None:
    a = parse_postgres_url("postgresql://db/app", namespace="a").channel
    b = parse_postgres_url("postgresql://db/app", namespace="b").channel
    c = parse_postgres_url("postgresql://db/app?schema=other", namespace="a").channel
    assert len({a, b, c}) == 3
    assert all(len(ch) <= 63 and ch.isidentifier() for ch in (a, b, c))


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("postgresql://db/app?schema=Bad-Name", "schema"),
        ("postgresql://db/app?schema=pg_x", "schema"),
        ("postgresql://db/app?schema=" + "a" * 64, "schema"),
        ("postgresql://db/app?pool_size=1", "pool_size"),
        ("postgresql://db/app?pool_size=x", "pool_size"),
        ("postgresql://db/app?schema=a&schema=b", "schema"),
        ("postgresql://db/app#frag", "fragment"),
        ("mysql://db/app", "PostgreSQL URL"),
    ],
)
def test_bad_urls_are_refused_naming_the_culprit(url: str, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        parse_postgres_url(url, namespace="n")


def test_open_store_picks_postgres_for_both_schemes() -> None:
    for scheme in ("postgresql", "postgres"):
        store = open_store(f"{scheme}://db/app", namespace="n")
        assert isinstance(store, PostgresStore)
    with pytest.raises(ConfigError, match="replicas"):
        open_store("postgresql://db/app", namespace="n", durability="replicated")
