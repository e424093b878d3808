"""``schedule_on_commit``: schedule a task once the Django transaction commits, for a store
that shares no transaction with the project's database (Redis), docs/transactions.md."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from duetime.contrib.django.apps import sync_client
from duetime.sync import SyncClient
from duetime.validate import check_id, check_name


def schedule_on_commit(
    task_type: str,
    task_id: str,
    *,
    using: str | None = None,
    client: SyncClient | None = None,
    **options: Any,
) -> tuple[str, str]:
    """Schedule the task (``SyncClient.schedule`` with ``options``) after the transaction of
    the database ``using`` commits (Django's ``transaction.on_commit``): never if it rolls
    back; at once when no transaction is open. At most once: a process that dies between
    the commit and the schedule loses the task, and a failure of the schedule then is
    raised from the commit (Django's ``on_commit``), the project's rows committed.

    Args:
        client: the blocking client to schedule with (default: :func:`sync_client`).

    Returns:
        ``(task_type, task_id)``, at once (the id is the caller's).

    Raises:
        ValidationError: the type or the id is not valid; nothing is registered.
    """
    check_name("task_type", task_type)
    check_id(task_id)
    chosen = client if client is not None else sync_client()
    transaction.on_commit(lambda: chosen.schedule(task_type, task_id, **options), using=using)
    return task_type, task_id
