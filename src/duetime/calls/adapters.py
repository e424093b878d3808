"""The driver connection inside what an application passes as ``connection=``: a Django
database connection (``django.db.connection``) gives its DBAPI connection (psycopg 3 or
sqlite3), which the store then checks as it checks any (docs/transactions.md)."""

from __future__ import annotations

from duetime.errors import ConfigError


def driver_connection(connection: object) -> object:
    """``connection`` itself, or the driver's connection a framework's object holds.

    Raises:
        ConfigError: a Django connection that is not connected yet, or whose atomic block
            failed (it must roll back).
    """
    if type(connection).__module__.startswith(_DJANGO):
        return _django(connection)
    return connection


#: Django's connection wrappers, and ``django.db.connection``, a proxy to the wrapper of
#: the thread that reads it (so it is read in the caller's thread: ``SyncClient`` does).
_DJANGO = ("django.db.backends.", "django.utils.connection")


def _django(wrapper: object) -> object:
    # Plain attributes only: Django's methods refuse to run in an event loop's thread, and
    # app.sync() runs its calls in one.
    alias = getattr(wrapper, "alias", "?")
    if getattr(wrapper, "needs_rollback", False):
        raise ConfigError(
            f"connection=: the Django connection {alias!r} is in an atomic block that failed "
            "(it needs a rollback)"
        )
    raw = getattr(wrapper, "connection", None)
    if raw is None:
        raise ConfigError(
            f"connection=: the Django connection {alias!r} is not connected yet: call it "
            "inside transaction.atomic(), or call connection.ensure_connection() first"
        )
    return raw
