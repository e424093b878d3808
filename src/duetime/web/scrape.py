"""``/metrics`` on the dashboard: the store-wide gauges (tasks due, running and dead per
type), for a Prometheus that scrapes the dashboard rather than every worker. Read on
scrape, cached a few seconds (:class:`~duetime.metrics.StoreGauges`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from duetime.app import App


def routes(app: App) -> list[Route]:
    try:
        from duetime.metrics import StoreGauges
    except ImportError:  # pragma: no cover - the web extra brings prometheus-client
        return []
    gauges = StoreGauges(app)

    async def metrics(request: Request) -> Response:
        await request.app.state.types([], {})  # the types the store holds become the app's
        body, content_type = await gauges.render(request.headers.get("accept", ""))
        return PlainTextResponse(body, media_type=content_type)

    return [Route("/metrics", metrics)]
