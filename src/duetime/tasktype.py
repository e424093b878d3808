"""A registered task type: its handler, how the handler is called, its policy and hook."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from duetime.errors import DuplicateTaskNameError, UnknownTaskType, ValidationError
from duetime.model import History, Pacing, Reschedule, TaskPolicy
from duetime.stores.gating import Gate
from duetime.validate import check_name, check_partitions

if TYPE_CHECKING:
    from duetime.middleware import MiddlewareLike
    from duetime.rate import Rate

Handler = Callable[..., Any]
Hook = Callable[..., "Reschedule | bool | None | Awaitable[Reschedule | bool | None]"]
#: What a handler is given: the payload, the payload and the Context, (cron handlers taking
#: one argument) the Context alone, or some fields of the payload (the type's ``takes``:
#: an expiring group's key and value, say), with or without the Context.
CallMode = Literal["payload", "both", "ctx", "fields", "fields_ctx"]


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine to await: an ``async def`` function or
    method, a ``functools.partial`` of one, or an object whose ``__call__`` is one."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the object's own method
    return not inspect.isroutine(fn) and inspect.iscoroutinefunction(call)


def _no_var_args(fn: Callable[..., Any]) -> bool:
    kinds = {p.kind for p in inspect.signature(fn).parameters.values()}
    return inspect.Parameter.VAR_POSITIONAL not in kinds


def positional_arity(fn: Callable[..., Any]) -> int:
    """How many positional arguments ``fn`` takes (2 for ``*args``)."""
    params = inspect.signature(fn).parameters.values()
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in kinds)


def call_mode(fn: Handler, *, cron: bool = False, takes: tuple[str, ...] = ()) -> CallMode:
    """How to call a handler, from its signature; raises ValidationError if it cannot be.

    ``takes`` names the payload fields it is given instead of the payload (then the
    Context, if it takes one more argument).
    """
    if not callable(fn):
        raise ValidationError("handler", "must be callable")
    arity = positional_arity(fn)
    if takes:
        if arity < len(takes):
            fields = ", ".join(takes)
            raise ValidationError("handler", f"must take ({fields}) or ({fields}, ctx)")
        return "fields" if arity == len(takes) and _no_var_args(fn) else "fields_ctx"
    if arity >= 2:
        return "both"
    if arity == 1:
        return "ctx" if cron else "payload"
    expected = "(ctx) or (payload, ctx)" if cron else "(payload) or (payload, ctx)"
    raise ValidationError("handler", f"must take {expected}")


def gate_of(policy: TaskPolicy, partitions: int = 1) -> Gate | None:
    """The limits claims of a type with ``policy`` are held to: its rate, global
    concurrency and each group's, or None without any.

    A type over several partitions keeps its gate in each, each holding its share (see
    ``Gate.share``), so every partition needs a whole running slot and a whole burst.

    Raises:
        ValidationError: a concurrency or a rate's burst below ``partitions``.
    """
    limits = (policy.rate, policy.global_concurrency, policy.group_rate, policy.group_concurrency)
    if all(limit is None for limit in limits):
        return None
    rate, most = _limits(policy.rate, policy.global_concurrency, "", partitions)
    group_rate, group_most = _limits(
        policy.group_rate, policy.group_concurrency, "group_", partitions
    )
    return Gate(*rate, most, *group_rate, group_most)


def _limits(
    rate: Rate | None, most: int | None, prefix: str, partitions: int
) -> tuple[tuple[float, float], int]:
    """``((interval, burst), most running)`` of a rate and a concurrency (``prefix`` names
    their options: "" or "group_"), checked against ``partitions``."""
    if most is not None and most < partitions:
        raise ValidationError(
            f"{prefix}concurrency" if prefix else "global_concurrency",
            f"must be at least partitions ({partitions}): each partition holds a share of it",
        )
    if rate is not None and rate.bucket < partitions:
        raise ValidationError(
            f"{prefix}rate",
            f"its burst ({rate.bucket}) must be at least partitions ({partitions}): each "
            "partition holds a share of it",
        )
    spacing = (0.0, 1.0) if rate is None else (rate.interval_ms, float(rate.bucket))
    return spacing, most or 0


@dataclass(eq=False)
class TaskType:
    """A registered task type: its name, handler, policy and reschedule hook.

    ``@app.task(...)`` returns one. Calling it calls the handler; ``.schedule(id, ...)`` is
    ``app.schedule(name, id, ...)``; ``@handler.reschedule`` sets the reschedule hook.
    """

    name: str
    handler: Handler | None
    policy: TaskPolicy
    pacing: Pacing
    mode: CallMode = "payload"
    hook: Hook | None = None
    #: The payload fields a handler of mode "fields" or "fields_ctx" is given.
    takes: tuple[str, ...] = ()
    #: Only declared (``app.declare``): scheduled by this process and run by another, so
    #: its name may still be registered.
    declared: bool = False
    #: How many partitions its tasks are spread over (see :mod:`duetime.partitions.store`).
    partitions: int = 1
    #: How much of its run history it keeps: a History, False for none, None for the app's.
    history: History | bool | None = None
    #: The priority of its tasks scheduled without one (-100 to 100).
    priority: int = 0
    #: Its own middleware around its handler, outermost first, inside the App's.
    middleware: tuple[MiddlewareLike, ...] = ()
    #: The app's ``schedule`` call, for :meth:`schedule`.
    scheduler: Callable[..., Awaitable[datetime]] | None = field(default=None, repr=False)
    is_async: bool = field(init=False)
    hook_takes_ctx: bool = field(init=False, default=False)
    #: The limits its claims are held to across every worker (None without any).
    gate: Gate | None = field(init=False)

    def __post_init__(self) -> None:
        self.is_async = self.handler is not None and is_async_callable(self.handler)
        self.gate = gate_of(self.policy, self.partitions)

    @property
    def takes_ctx(self) -> bool:
        """Whether the handler is given a :class:`~duetime.Context` (else the worker makes
        none for its runs)."""
        return self.mode in ("both", "ctx", "fields_ctx")

    def args(self, payload: dict[str, Any], ctx: Any) -> tuple[Any, ...]:
        """The arguments the handler is called with."""
        mode = self.mode
        if mode == "payload":
            return (payload,)
        if mode == "both":
            return (payload, ctx)
        if mode == "ctx":
            return (ctx,)
        fields = tuple(payload[name] for name in self.takes)
        return fields if mode == "fields" else (*fields, ctx)

    def bind(self, handler: Handler, mode: CallMode) -> None:
        """Give a type registered without one its handler (an expiring group's, say)."""
        if self.handler is not None:
            raise ValidationError("handler", f"{self.name!r} already has {self.handler!r}")
        self.handler, self.mode = handler, mode
        self.is_async = is_async_callable(handler)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.handler is None:
            raise TypeError(f"task type {self.name!r} is declared without a handler")
        return self.handler(*args, **kwargs)

    def reschedule(self, hook: Hook) -> Hook:
        """Decorate the hook that decides whether a periodic task goes on, and with what.

        The hook gets the payload (and the Context if it takes two arguments) after each
        occurrence and returns True or None to go on unchanged, False to end the series,
        or a :class:`Reschedule` with payload changes to deep-merge and an optional time.
        It may be async. If it raises, the series goes on unchanged and the error is
        logged: a failing hook never ends a series.
        """
        if not callable(hook):
            raise ValidationError("hook", "must be callable")
        self.hook = hook
        self.hook_takes_ctx = positional_arity(hook) >= 2
        return hook

    async def ask_hook(self, payload: dict[str, Any], ctx: Any) -> object:
        """The reschedule hook's answer about ``payload`` (awaited if it is async); True
        when the type has no hook."""
        hook = self.hook
        if hook is None:
            return True
        answer = hook(payload, ctx) if self.hook_takes_ctx else hook(payload)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer

    async def schedule(self, task_id: str, **options: Any) -> datetime:
        """``app.schedule(<this type>, task_id, **options)``."""
        if self.scheduler is None:
            raise TypeError(f"task type {self.name!r} belongs to no app")
        return await self.scheduler(self.name, task_id, **options)


class TaskTypes(dict[str, TaskType]):
    """The task types an app knows by name: registered with a handler, or declared.

    Args:
        scheduler: the app's ``schedule`` call, given to the types it declares.
    """

    def __init__(self, scheduler: Callable[..., Awaitable[datetime]]) -> None:
        super().__init__()
        #: The app's ``schedule`` call, given to the types it holds (``TaskType.schedule``).
        self.scheduler = scheduler

    def check_free(self, name: str) -> None:
        """Raise unless ``name`` may be registered: free, or only declared.

        Raises:
            DuplicateTaskNameError: a type of that name has a handler (or is an expiring
                group waiting for one).
        """
        existing = self.get(name)
        if existing is not None and not existing.declared:
            taken = "an expiring group" if existing.handler is None else repr(existing.handler)
            raise DuplicateTaskNameError(name, taken)

    def add(self, task_type: TaskType) -> TaskType:
        """Register ``task_type`` (in place of a declared one of its name); returns it.

        Raises:
            DuplicateTaskNameError: the name is registered already.
        """
        self.check_free(task_type.name)
        self[task_type.name] = task_type
        return task_type

    def declare(self, names: Iterable[str], partitions: int) -> None:
        """Add the types ``names``, without handlers, unless registered already."""
        check_partitions(partitions)
        for name in names:
            check_name("task_type", name)
            if name not in self:
                self[name] = TaskType(
                    name,
                    None,
                    TaskPolicy(),
                    Pacing(),
                    declared=True,
                    partitions=partitions,
                    scheduler=self.scheduler,
                )

    def find(self, name: object) -> TaskType:
        """The type ``name``; raises UnknownTaskType (a ValidationError) if there is none."""
        task_type = self.get(name) if isinstance(name, str) else None
        if task_type is None:
            check_name("task_type", name)
            raise UnknownTaskType(str(name), tuple(self))
        return task_type

    def partitions_of(self, name: str) -> int:
        """How many partitions the type ``name`` is spread over (1 for an unknown one)."""
        task_type = self.get(name)
        return 1 if task_type is None else task_type.partitions
