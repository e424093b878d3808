"""An App refuses a URL that names no store as it is made, naming the scheme, rather than
at its first call."""

from __future__ import annotations

import pytest

import duetime


@pytest.mark.parametrize(
    "url", ["redsi://x", "mongodb://x/0", "localhost:6379", "Redis-Sentinel://x"]
)
def test_an_unknown_scheme_is_refused_when_the_app_is_made(url: str) -> None:
    scheme = url.partition("://")[0].lower() if "://" in url else "localhost"
    with pytest.raises(duetime.ConfigError, match=f"unknown store URL scheme '{scheme}'"):
        duetime.App(url)


@pytest.mark.parametrize("url", ["", "   "])
def test_an_empty_url_is_refused_when_the_app_is_made(url: str) -> None:
    with pytest.raises(duetime.ConfigError, match="non-empty"):
        duetime.App(url)


@pytest.mark.parametrize(
    "url", ["redis://x", "REDIS://x", "rediss+cluster://x", "postgres://x/db", "sqlite:///a.db"]
)
def test_each_known_scheme_is_accepted_without_connecting(url: str) -> None:
    assert duetime.App(url).url  # made, not opened
