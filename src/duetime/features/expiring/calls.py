"""The App's call that makes an expiring group: ``app.expiring``."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Unpack

from duetime.calls.producing import opened
from duetime.features.expiring.feature import ExpiringFeature
from duetime.features.history.settings import check_setting
from duetime.middleware import check_middleware
from duetime.model import History, Pacing, PolicyOptions, TaskPolicy
from duetime.registry import AppSide
from duetime.tasktype import TaskType
from duetime.validate import check_name

if TYPE_CHECKING:
    from collections.abc import Sequence

    from duetime.features.expiring.group import ExpiringGroup
    from duetime.middleware import MiddlewareLike


class ExpiringOptions(PolicyOptions, total=False):
    """What ``app.expiring`` takes beside the TTL: the group's task type's policy, how
    often workers claim its expiries, how much of its run history it keeps, and its own
    middleware (inside the App's)."""

    pacing: Pacing | None
    history: History | bool | None
    middleware: Sequence[MiddlewareLike]


class ExpiringCalls:
    """The expiring groups of an :class:`~duetime.App` (a part of it)."""

    @property
    def expiring_groups(self: AppSide) -> dict[str, ExpiringGroup]:
        """The app's expiring groups, by name."""
        return self.registry.get(ExpiringFeature).groups

    def expiring(
        self: AppSide, name: str, *, ttl: timedelta | float, **options: Unpack[ExpiringOptions]
    ) -> ExpiringGroup:
        """An expiring group: values put under keys that go to its handler (set with
        ``@group.on_expire``) when their TTL runs out, once each, on one worker.

        Entries live in the store, indexed by expiry: they are handled on time whatever
        Redis's keyspace notifications do, and those that expired while every worker was
        down are handled when one starts. The group is a task type named ``name``: the
        other options are :meth:`~duetime.App.task`'s (retries, backoff, timeout,
        concurrency, lease, pacing, history), and an expiry that keeps failing ends in its dead
        letters with its value.

        Raises:
            ValidationError: a bad name, TTL or option, or a name already taken.
        """
        from duetime.features.expiring.group import ExpiringGroup  # an app with a group only

        check_name("task_type", name)
        given: dict[str, Any] = dict(options)
        pacing = given.pop("pacing", None)
        history = check_setting("history", given.pop("history", None))
        middleware = check_middleware(given.pop("middleware", ()))
        policy = TaskPolicy.from_options(**given)
        group_type = TaskType(
            name,
            None,
            policy,
            pacing or Pacing(),
            mode="fields_ctx",
            takes=("key", "value"),
            scheduler=self.types.scheduler,
            history=history,
            middleware=middleware,
        )
        group = ExpiringGroup(
            group_type,
            ttl,
            open_store=lambda connection: opened(self, connection),
            now_ms=self.now_ms,
            max_payload_bytes=self.max_payload_bytes,
        )
        self.types.add(group_type)
        feature = self.registry.get(ExpiringFeature)
        feature.groups[name] = group
        self.registry.check_now(self)
        return group
