"""Tracing on each store, producer and worker in this process, spans in the SDK's in-memory
exporter: one trace from a span around schedule to the handler's own span, a retry's two
consumer spans (the first an error), link_only, a task without a trace context."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import duetime
from duetime.contrib.otel import META_KEY, Tracing
from tests.helpers import eventually, is_gone, running

FAST = duetime.Backoff(base=timedelta(milliseconds=20), jitter=0)


class Traced:
    """An app with Tracing, the provider its spans go to, and what was exported."""

    def __init__(self, app: duetime.App, provider: TracerProvider, spans: InMemorySpanExporter):
        self.app, self.provider, self.exporter = app, provider, spans

    def spans(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name == name]


async def traced_app(store_url: str, namespace: str, **options: Any) -> Traced:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(tracer_provider=provider, **options)
    app = duetime.App(store_url, namespace=namespace, middleware=[tracing])
    await app.open()
    return Traced(app, provider, exporter)


@pytest.fixture
async def traced(store_url: str, namespace: str) -> AsyncIterator[Traced]:
    t = await traced_app(store_url, namespace)
    yield t
    await t.app.close()


async def test_one_trace_runs_from_a_span_around_schedule_to_the_handlers_own_span(
    traced: Traced,
) -> None:
    app, tracer = traced.app, traced.provider.get_tracer("test")

    @app.task("report", retries=1, backoff=FAST)
    async def report(payload: dict[str, Any], ctx: duetime.Context) -> None:
        with tracer.start_as_current_span("inside"):
            if ctx.attempt == 1:
                raise ValueError("first attempt fails")

    with tracer.start_as_current_span("request") as request:
        # The App's Tracing puts the current trace context into the task's metadata.
        await app.schedule("report", "r-7", meta={"tenant": "t7"})
    stored = await app.get("report", "r-7")
    assert stored is not None and stored.meta["tenant"] == "t7"
    assert "traceparent" in stored.meta[META_KEY]
    async with running(app):
        await eventually(lambda: is_gone(app, "report", "r-7"))
        await eventually(lambda: len(traced.spans("run report")) == 2)

    trace_id = request.get_span_context().trace_id
    first, second = sorted(traced.spans("run report"), key=lambda s: s.start_time or 0)
    for run in (first, second):
        assert run.kind is SpanKind.CONSUMER and run.context is not None
        assert run.context.trace_id == trace_id
        assert run.parent is not None and run.parent.span_id == request.get_span_context().span_id
        assert run.attributes is not None
        assert run.attributes["messaging.system"] == "duetime"
        assert run.attributes["messaging.destination.name"] == "report"
        assert run.attributes["messaging.message.id"] == "r-7"
    assert first.attributes is not None and first.attributes["duetime.attempt"] == 1
    assert first.status.status_code is StatusCode.ERROR
    assert [e.name for e in first.events] == ["exception"]
    assert second.status.status_code is not StatusCode.ERROR and not second.events
    inner = traced.spans("inside")
    assert len(inner) == 2
    runs = {first.context.span_id, second.context.span_id}
    assert {s.parent.span_id for s in inner if s.parent is not None} == runs


async def test_link_only_starts_a_trace_of_its_own_linked_to_the_producers(
    store_url: str, namespace: str
) -> None:
    traced = await traced_app(store_url, namespace, link_only=True)
    app, tracer = traced.app, traced.provider.get_tracer("test")
    ran: list[str] = []

    @app.task("later")
    def later(payload: dict[str, Any]) -> None:  # a plain def: its span in its thread
        with tracer.start_as_current_span("inside"):
            ran.append("later")

    try:
        with tracer.start_as_current_span("request") as request:
            await app.schedule("later", "l1", meta=Tracing().stamp())
        await app.schedule("later", "plain")  # no span current: a root span
        plain_info = await app.get("later", "plain")
        assert plain_info is not None and plain_info.meta == {}
        async with running(app):
            await eventually(lambda: len(traced.spans("run later")) == 2)
    finally:
        await app.close()
    by_id = {s.attributes["messaging.message.id"]: s for s in traced.spans("run later")}  # type: ignore[index]
    linked, plain = by_id["l1"], by_id["plain"]
    origin = request.get_span_context()
    assert linked.parent is None and linked.context is not None
    assert linked.context.trace_id != origin.trace_id
    assert [link.context.span_id for link in linked.links] == [origin.span_id]
    assert plain.parent is None and not plain.links
    inner = traced.spans("inside")
    assert {s.parent.span_id for s in inner if s.parent} == {
        linked.context.span_id,
        plain.context.span_id,
    }
