"""duetime in a Django project; needs ``pip install 'duetime[django]'``.

In ``settings.py``::

    INSTALLED_APPS = [..., "duetime.contrib.django"]
    DUETIME_URL = "redis://localhost:6379/0"      # or sqlite:///..., postgresql://...
    DUETIME_APP = "myproject.tasks:app"           # the App manage.py duetime works on
    DUETIME_NAMESPACE = "default"                 # optional

In ``myproject/tasks.py``, ``app = new_app()`` (an App on those settings) and the handlers;
in a view, ``sync_client().schedule(...)`` (``connection=django.db.connection`` in the
project's transaction, when it is the store's database; ``schedule_on_commit(...)`` after
it, when not); in a shell, ``manage.py duetime worker``,
``manage.py duetime ls``, and every other command of ``duetime --help``.
"""

from __future__ import annotations

from duetime.contrib.django.apps import sync_client
from duetime.contrib.django.conf import DuetimeSettings, get_app, new_app, read_settings
from duetime.contrib.django.oncommit import schedule_on_commit

__all__ = [
    "DuetimeSettings",
    "get_app",
    "new_app",
    "read_settings",
    "schedule_on_commit",
    "sync_client",
]
