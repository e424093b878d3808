"""OpenTelemetry traces of task runs (``pip install 'duetime[otel]'``): :class:`Tracing`, a
middleware that makes a consumer span of each attempt, and its producer's side, which puts
the current W3C trace context into a task's metadata.

Nothing imports this module but an app that uses it: without it, duetime imports no
OpenTelemetry module.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from duetime.context import Context
from duetime.middleware import CallNext, Middleware
from duetime.version import VERSION

#: The key of a task's metadata under which its trace context travels (the W3C
#: ``traceparent``, ``tracestate`` and ``baggage`` headers, as the global propagator writes
#: them).
META_KEY = "otel"


class Tracing(Middleware):
    """A consumer span (``run <type>``, kind CONSUMER) around each attempt of a run.

    Args:
        tracer_provider: where the spans go; by default OpenTelemetry's global provider.
        link_only: start each run's span in a trace of its own, with a link to the context
            the task was scheduled in (for tasks due long after), instead of as its child.

    The span is the child of the trace context stored with the task (:meth:`stamp`), or a
    new root span for a task scheduled without one. It is current while the handler runs:
    a span the handler starts is its child (a plain ``def`` handler's too, in its thread).
    A failure is recorded on it as an exception event with status ERROR; a run cut short
    (time limit, abort) ends it with status ERROR too.
    """

    def __init__(self, *, tracer_provider: Any = None, link_only: bool = False) -> None:
        self._tracer = trace.get_tracer("duetime", VERSION, tracer_provider=tracer_provider)
        self.link_only = link_only

    def stamp(self, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``meta`` (a task's metadata, or None) with the current trace context added under
        :data:`META_KEY`: give it as ``meta=`` to ``schedule``, ``submit`` or a
        :class:`~duetime.Task`, and the run's span continues this trace."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        stamped = dict(meta or {})
        if carrier:
            stamped[META_KEY] = carrier
        return stamped

    def producing(self, meta: dict[str, Any] | None) -> dict[str, Any] | None:
        """As a task is scheduled by the App with this middleware: :meth:`stamp`, unless
        the task has a trace context already or none is current."""
        if meta is not None and (not isinstance(meta, dict) or META_KEY in meta):
            return meta  # its own trace context, or not metadata (refused as it is written)
        if not trace.get_current_span().get_span_context().is_valid:
            return meta
        return self.stamp(meta)

    async def __call__(self, ctx: Context, call_next: CallNext) -> Any:
        parent, links = self._origin(ctx)
        attributes: dict[str, str | int] = {
            "messaging.system": "duetime",
            "messaging.operation.type": "process",
            "messaging.operation.name": "run",
            "messaging.destination.name": ctx.task_type,
            "messaging.message.id": ctx.task_id,
            "duetime.attempt": ctx.attempt,
            "duetime.occurrence": ctx.occurrence,
        }
        with self._tracer.start_as_current_span(
            f"run {ctx.task_type}",
            context=parent,
            kind=SpanKind.CONSUMER,
            links=links,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                return await call_next()
            except Exception as exc:
                span.record_exception(exc)
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                raise
            except asyncio.CancelledError:
                span.set_status(Status(StatusCode.ERROR, "cut short (a time limit or an abort)"))
                raise

    def _origin(self, ctx: Context) -> tuple[otel_context.Context, list[Link]]:
        """The context a run's span starts in, and its links: the stored trace context as
        its parent (or, with ``link_only``, a new trace linked to it); a new trace when
        the task carries none (never the worker's own context)."""
        carrier = ctx.meta.get(META_KEY)
        fresh = otel_context.Context()
        if not isinstance(carrier, Mapping):
            return fresh, []
        stored = propagate.extract(dict(carrier))
        origin = trace.get_current_span(stored).get_span_context()
        if not origin.is_valid:
            return fresh, []
        if self.link_only:
            return fresh, [Link(origin)]
        return stored, []
