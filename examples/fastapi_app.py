"""duetime inside a FastAPI app: the store opens and closes with the app, a worker runs in
the server's event loop, and a request schedules a task.

    pip install duetime fastapi uvicorn
    uvicorn examples.fastapi_app:web
    curl -X POST 'http://127.0.0.1:8000/signups?email=ana@example.com'
    curl 'http://127.0.0.1:8000/signups/ana@example.com'

The store is ``DUETIME_URL``, or the SQLite file ``duetime.db`` in the working directory.
With several server processes (``uvicorn --workers 4``), each runs a worker of its own on
the same store: together they run each task once. To keep the web processes free of task
work, drop ``worker=True`` and run ``duetime worker examples.fastapi_app:app`` beside them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from fastapi import FastAPI

import duetime
from duetime.asgi import lifespan

app = duetime.App()  # DUETIME_URL, or sqlite:///duetime.db


@app.task("welcome", retries=3)
async def send_welcome(payload: dict[str, Any], ctx: duetime.Context) -> None:
    print(f"welcome mail to {payload['email']} (attempt {ctx.attempt})", flush=True)


# The store opened and a worker claiming while the web app runs; at shutdown the worker
# gets 10 s to finish its handlers, and hands back what it did not finish.
duetime_lifespan = lifespan(app, worker=True, grace=10)


@contextlib.asynccontextmanager
async def web_lifespan(web: FastAPI) -> AsyncIterator[None]:
    """The web app's own start-up and shutdown, around duetime's."""
    async with duetime_lifespan(web):
        print("signups open", flush=True)  # the store is open and the worker claims
        yield
        print("signups closed", flush=True)  # the worker still runs here; it stops next


web = FastAPI(lifespan=web_lifespan)


@web.post("/signups")
async def sign_up(email: str, delay: float = 1.0) -> dict[str, str]:
    """Send the welcome mail ``delay`` seconds from now (signing up twice moves it)."""
    due = await app.schedule(
        "welcome", email, payload={"email": email}, delay=timedelta(seconds=delay)
    )
    return {"task": email, "due": due.isoformat()}


@web.get("/signups/{email}")
async def signup_state(email: str) -> dict[str, str]:
    """Where the welcome mail is: due, running, dead, or sent (finished tasks are not kept)."""
    info = await app.get("welcome", email)
    return {"task": email, "state": "sent" if info is None else info.state}
