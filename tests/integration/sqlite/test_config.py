"""The SQLite URL: relative and absolute paths, options, and what is refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

import duetime
from duetime.stores.sqlite.config import DEFAULT_BUSY_TIMEOUT_MS, parse_sqlite_url


def test_a_url_with_three_slashes_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = parse_sqlite_url("sqlite:///data/tasks.db", namespace="ns")
    assert config.path == tmp_path / "data" / "tasks.db"
    assert (config.namespace, config.synchronous) == ("ns", "full")
    assert config.busy_timeout_ms == DEFAULT_BUSY_TIMEOUT_MS


def test_a_url_with_four_slashes_is_absolute_and_takes_options() -> None:
    config = parse_sqlite_url(
        "sqlite:////var/lib/x.db?synchronous=NORMAL&busy_timeout_ms=250", namespace="ns"
    )
    assert config.path == Path("/var/lib/x.db")
    assert (config.synchronous, config.busy_timeout_ms) == ("normal", 250)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("sqlite://host/x.db", "host"),
        ("sqlite://", "no file path"),
        ("sqlite:///", "no file path"),
        ("sqlite:///:memory:", "in-memory"),
        ("sqlite:///dir/", "directory"),
        ("sqlite:///x.db?journal=wal", "'journal'"),
        ("sqlite:///x.db?synchronous=off", "synchronous=off"),
        ("sqlite:///x.db?synchronous=fast", "synchronous='fast'"),
        ("sqlite:///x.db?busy_timeout_ms=soon", "busy_timeout_ms='soon'"),
        ("sqlite:///x.db?busy_timeout_ms=-1", "busy_timeout_ms=-1"),
        ("sqlite:///x.db?synchronous=full&synchronous=normal", "given twice"),
        ("redis:///x.db", "not a SQLite URL"),
    ],
)
def test_a_bad_url_or_option_is_refused_by_name(url: str, named: str) -> None:
    with pytest.raises(duetime.ConfigError, match=None) as caught:
        parse_sqlite_url(url, namespace="ns")
    assert named in str(caught.value)
