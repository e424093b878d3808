"""The project's task types and their handlers: run them with
``python manage.py duetime worker``."""

from __future__ import annotations

from typing import Any

import duetime
from duetime.contrib.django import new_app

app = new_app()  # on settings.DUETIME_URL


@app.task("welcome", retries=3)
def send_welcome(payload: dict[str, Any], ctx: duetime.Context) -> None:
    # A plain def runs in the worker's thread pool, where Django's ORM may be used (call
    # django.db.close_old_connections() first and last, as Django does around a request).
    print(f"welcome mail to {payload['email']} (attempt {ctx.attempt})", flush=True)
