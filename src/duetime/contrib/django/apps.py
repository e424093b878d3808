"""The Django app ``duetime.contrib.django``: checks the settings at start-up, and keeps the
process's blocking client for views."""

from __future__ import annotations

import threading

from django.apps import AppConfig, apps

from duetime.sync import SyncClient

LABEL = "duetime"


class DuetimeConfig(AppConfig):
    """duetime's place among the project's apps (label ``duetime``)."""

    name = "duetime.contrib.django"
    label = LABEL
    verbose_name = "duetime"

    def ready(self) -> None:
        from duetime.contrib.django.conf import read_settings

        read_settings()  # a bad setting stops the project at start-up, named
        self._client: SyncClient | None = None
        self._lock = threading.Lock()

    def sync_client(self) -> SyncClient:
        """The blocking client of ``DUETIME_APP``'s App, made on first use in this process."""
        with self._lock:
            if self._client is None:
                from duetime.contrib.django.conf import get_app

                # Never closed: it lives as long as the process, whose exit ends its thread
                # (a daemon) and its connection. (Closing it from atexit would be too late:
                # the interpreter refuses new threads' work by then.)
                self._client = get_app().sync()
            return self._client


def sync_client() -> SyncClient:
    """The process's blocking client of the App ``DUETIME_APP`` names, for views and other
    code that is not async: one per process, made on first use (so in each worker process
    of a pre-forking server, not before the fork), for the life of the process.

    Raises:
        ImproperlyConfigured: ``DUETIME_APP`` is not set or bad.
        LookupError: ``duetime.contrib.django`` is not in ``INSTALLED_APPS``.
    """
    config = apps.get_app_config(LABEL)
    assert isinstance(config, DuetimeConfig)
    return config.sync_client()
