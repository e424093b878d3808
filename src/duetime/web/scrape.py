"""``/metrics`` on the dashboard: the store-wide gauges (tasks due, running and dead per
type), for a Prometheus that scrapes the dashboard rather than every worker. Read on
scrape, cached a few seconds (:class:`~duetime.metrics.StoreGauges`), for the types the
dashboard lists (the App's and those the store holds)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from duetime.app import App
from duetime.stores.base import State
from duetime.web import data


def routes(app: App, type_names: data.TypeNames) -> list[Route]:
    try:
        from duetime.metrics import StoreGauges
    except ImportError:  # pragma: no cover - the web extra brings prometheus-client
        return []

    async def read() -> dict[str, dict[State, int]]:
        names = await type_names([], {})
        return dict(zip(names, await data.counts(type_names, names), strict=True))

    gauges = StoreGauges(app, read=read)

    async def metrics(request: Request) -> Response:
        body, content_type = await gauges.render(request.headers.get("accept", ""))
        return PlainTextResponse(body, media_type=content_type)

    return [Route("/metrics", metrics)]
