"""The example project's settings: a minimal project, plus duetime's three settings."""

from __future__ import annotations

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "only-for-the-example")
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
ROOT_URLCONF = "mysite.urls"
USE_TZ = True
MIDDLEWARE: list[str] = []

INSTALLED_APPS = ["duetime.contrib.django"]

# duetime: the store (a Redis or PostgreSQL URL in production; here a SQLite file beside
# manage.py unless DUETIME_URL says otherwise), and the App `manage.py duetime` works on.
DUETIME_URL = os.environ.get("DUETIME_URL", f"sqlite:///{BASE_DIR / 'duetime.db'}")
DUETIME_APP = "mysite.tasks:app"
