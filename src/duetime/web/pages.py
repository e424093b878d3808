"""The dashboard's pages: each reads through :mod:`.data` and renders one template. The
regions of a page that refresh themselves are fetched again whole, every few seconds, and
htmx swaps the region in (``templates/_live.html``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from duetime.app import App
from duetime.errors import DuetimeError, NotFound
from duetime.stores.base import STATES, State
from duetime.web import data
from duetime.web.guard import local_path

Page = Callable[[App, Request], Awaitable[tuple[str, dict[str, Any]] | Response]]


async def overview(app: App, request: Request) -> tuple[str, dict[str, Any]]:
    return "overview.html", {"overview": await data.overview(app, request.app.state.types)}


async def task_type(app: App, request: Request) -> tuple[str, dict[str, Any]] | Response:
    name, types = request.path_params["name"], request.app.state.types
    wanted = request.query_params.get("id")
    if wanted:  # the search box: the task itself, or this page saying it was not found
        if await data.task(types, name, wanted) is not None:
            root = request.scope.get("root_path", "")
            return RedirectResponse(root + task_url(name, wanted), 303)
    state = request.query_params.get("state", "due")
    if state not in STATES:
        state = "due"
    page = _int(request.query_params.get("page"), 1)
    listing = await data.listing(types, name, state, page)  # type: ignore[arg-type]
    runs = await data.runs(types, name)
    return "type.html", {"listing": listing, "not_found": wanted, "runs": runs}


async def task(app: App, request: Request) -> tuple[str, dict[str, Any]]:
    name, task_id = request.query_params.get("type", ""), request.query_params.get("id", "")
    types = request.app.state.types
    if name and not await types.shows(name):
        raise data.NotShown(name)  # 404, as the type's own page answers
    info = await data.task(types, name, task_id) if name and task_id else None
    runs = await data.runs(types, name, task_id) if name and task_id else []
    return "task.html", {"task_type": name, "task_id": task_id, "info": info, "runs": runs}


async def dead(app: App, request: Request) -> tuple[str, dict[str, Any]]:
    types = request.app.state.types
    return "dead.html", {"dead": await data.dead_letters(app, types), "invalid": types.invalid}


async def crons(app: App, request: Request) -> tuple[str, dict[str, Any]]:
    return "crons.html", {"crons": await data.crons(app, request.app.state.types)}


async def pollers(app: App, request: Request) -> tuple[str, dict[str, Any]]:
    return "pollers.html", {"pollers": await data.pollers(app, request.app.state.types)}


async def expiring(app: App, request: Request) -> tuple[str, dict[str, Any]]:
    return "expiring.html", {"groups": await data.expiring_groups(app)}


PAGES: dict[str, tuple[str, Page]] = {
    "/": ("overview", overview),
    "/types/{name}": ("type", task_type),
    "/task": ("task", task),
    "/dead": ("dead", dead),
    "/crons": ("crons", crons),
    "/pollers": ("pollers", pollers),
    "/expiring": ("expiring", expiring),
}


def task_url(task_type: str, task_id: str) -> str:
    """The page of one task; its id travels in the query string, encoded."""
    return "/task?" + urlencode({"type": task_type, "id": task_id})


def type_url(task_type: str, state: State = "due", page: int = 1) -> str:
    return f"/types/{task_type}?" + urlencode({"state": state, "page": page})


def routes(app: App, templates: Jinja2Templates, read_only: bool) -> list[Route]:
    def endpoint(name: str, page: Page) -> Callable[[Request], Awaitable[Response]]:
        async def render(request: Request) -> Response:
            try:
                result = await page(app, request)
            except DuetimeError as exc:
                # NotFound: a type neither the App nor its store knows; else the store failed.
                missing = isinstance(exc, NotFound)
                context = {
                    "error": str(exc),
                    "heading": "Not found" if missing else None,
                    "page": name,
                    **_common(request, read_only),
                }
                status = 404 if missing else 503
                return templates.TemplateResponse(request, "error.html", context, status)
            if isinstance(result, Response):
                return result
            template, context = result
            context.update(
                page=name,
                done=request.app.state.flash.message(request.query_params),
                **_common(request, read_only),
            )
            return templates.TemplateResponse(request, template, context)

        return render

    return [Route(path, endpoint(name, page)) for path, (name, page) in PAGES.items()]


def _common(request: Request, read_only: bool) -> dict[str, Any]:
    """What every page's template is given: where it is, and whether it may show the buttons
    of changes (a session: the guard found the token) or the login form instead."""
    return {
        "read_only": read_only,
        "session": bool(getattr(request.state, "session", False)),
        "root": request.scope.get("root_path", ""),
        "here": local_path(request) + (f"?{request.url.query}" if request.url.query else ""),
    }


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default
