"""Without duetime.contrib.otel, a worker that runs a handler through middleware imports no
OpenTelemetry module (checked in a process of its own: this one has the SDK loaded)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_duetime_imports_no_opentelemetry_module_unless_tracing_is_used(tmp_path: Path) -> None:
    script = f"""
import asyncio, sys
import duetime

async def main():
    app = duetime.App("sqlite:///{tmp_path / "t.db"}")
    done = asyncio.Event()

    @app.task("t", middleware=[duetime.Middleware()])
    async def t(payload):
        done.set()

    async with app:
        await app.schedule("t", "1")
        worker = app.worker()
        run = asyncio.create_task(worker.run())
        await asyncio.wait_for(done.wait(), 30)
        worker.stop()
        await run

asyncio.run(main())
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"
