"""A worker's own options are checked as it is made, naming the option; nothing runs."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import duetime


def _app(tmp_path: Path) -> duetime.App:
    app = duetime.App(f"sqlite:///{tmp_path / 'w.db'}")

    @app.task("job")
    async def job(payload: dict[str, Any]) -> None: ...

    return app


@pytest.mark.parametrize("grace", [math.nan, math.inf, -1, "30", None, True])
def test_a_bad_grace_is_refused(tmp_path: Path, grace: object) -> None:
    with pytest.raises(duetime.ValidationError, match="grace"):
        _app(tmp_path).worker(grace=grace)


def test_a_grace_of_zero_or_a_timedelta_is_seconds(tmp_path: Path) -> None:
    assert _app(tmp_path).worker(grace=0).grace == 0
    assert _app(tmp_path).worker(grace=2.5).grace == 2.5
    assert _app(tmp_path).worker(grace=timedelta(minutes=1)).grace == 60


def test_a_worker_needs_a_type_with_a_handler(tmp_path: Path) -> None:
    app = duetime.App(f"sqlite:///{tmp_path / 'w.db'}")
    app.declare("elsewhere")
    with pytest.raises(duetime.ValidationError, match="no task type with a handler"):
        app.worker()
    with pytest.raises(duetime.ValidationError, match="declared without a handler"):
        app.worker(types=["elsewhere"])
