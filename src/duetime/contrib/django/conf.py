"""The project's duetime settings (``DUETIME_URL``, ``DUETIME_APP``, ``DUETIME_NAMESPACE``),
the App made from them, and the App ``DUETIME_APP`` names."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Unpack

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from duetime.app import App
from duetime.client import ClientSettings
from duetime.errors import ValidationError
from duetime.validate import check_name

DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class DuetimeSettings:
    """What a project's settings say of duetime.

    Attributes:
        url: ``DUETIME_URL``: the store; None (not set) leaves it to the ``DUETIME_URL``
            environment variable, then the SQLite file ``duetime.db`` in the working
            directory.
        app: ``DUETIME_APP``: ``"module:attribute"`` of the project's App, the one
            ``manage.py duetime`` works on and :func:`get_app` returns; None if not set.
        namespace: ``DUETIME_NAMESPACE`` (default ``"default"``).
    """

    url: str | None
    app: str | None
    namespace: str


def read_settings(settings: Any = None) -> DuetimeSettings:
    """duetime's settings from ``settings`` (default: the project's, ``django.conf.settings``).

    Raises:
        ImproperlyConfigured: a setting of the wrong type or form, named.
    """
    source = django_settings if settings is None else settings
    url = _text(source, "DUETIME_URL")
    app = _text(source, "DUETIME_APP")
    if app is not None:
        module, _, attribute = app.partition(":")
        if not module or not attribute:
            raise ImproperlyConfigured(
                f"DUETIME_APP must be 'module:attribute', e.g. 'myproject.tasks:app', not {app!r}"
            )
    namespace = _text(source, "DUETIME_NAMESPACE") or DEFAULT_NAMESPACE
    try:
        check_name("namespace", namespace)
    except ValidationError as exc:
        raise ImproperlyConfigured(f"DUETIME_NAMESPACE: {exc}") from None
    return DuetimeSettings(url, app, namespace)


def _text(settings: Any, name: str) -> str | None:
    value = getattr(settings, name, None)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ImproperlyConfigured(f"{name} must be a non-empty string, not {value!r}")
    return value


def new_app(**options: Unpack[ClientSettings]) -> App:
    """An App on the project's store and namespace (``DUETIME_URL``,
    ``DUETIME_NAMESPACE``); ``options`` are :class:`~duetime.App`'s other settings.

    Raises:
        ImproperlyConfigured: a bad duetime setting.
    """
    conf = read_settings()
    given: dict[str, Any] = {"namespace": conf.namespace, **options}
    return App(conf.url, **given)


def get_app() -> App:
    """The App that ``DUETIME_APP`` names, imported.

    Raises:
        ImproperlyConfigured: ``DUETIME_APP`` is not set, cannot be imported, or does not
            name a duetime App.
    """
    path = read_settings().app
    if path is None:
        raise ImproperlyConfigured(
            "DUETIME_APP is not set: e.g. DUETIME_APP = 'myproject.tasks:app'"
        )
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImproperlyConfigured(f"DUETIME_APP: cannot import {module_name!r}: {exc}") from exc
    app = getattr(module, attribute, None)
    if app is None:
        raise ImproperlyConfigured(f"DUETIME_APP: {module_name!r} has no attribute {attribute!r}")
    if not isinstance(app, App):
        raise ImproperlyConfigured(
            f"DUETIME_APP: {path!r} is a {type(app).__name__}, not a duetime.App"
        )
    return app
