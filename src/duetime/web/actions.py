"""The dashboard's changes, each a POST whose parameters are in its query string (so no form
body is parsed), answered with a redirect back to the page it came from. The guard
(:mod:`.guard`) has checked the token and the origin before any of these runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from duetime.admin.bulk import cancel_all, retry_all
from duetime.app import App
from duetime.errors import BulkIncomplete, DuetimeError, NotFound, TaskNotFound
from duetime.web import flash
from duetime.web.data import TypeNames

Action = Callable[[App, Request], Awaitable[str]]


async def retry(app: App, request: Request) -> str:
    client, name, task_id = await _task(request)
    await client.retry(name, task_id)
    return f"{task_id} is due again"


async def delete(app: App, request: Request) -> str:
    client, name, task_id = await _task(request)
    if not await client.cancel(name, task_id):
        raise TaskNotFound(name, task_id)
    return f"{task_id} deleted"


async def abort(app: App, request: Request) -> str:
    client, name, task_id = await _task(request)
    status = await client.abort(name, task_id)
    if status == "not_found":
        raise TaskNotFound(name, task_id)
    return _ABORTED[status].format(task_id)


#: What the dashboard says after an abort, by its status.
_ABORTED = {
    "aborted": "{} aborted: its worker cancels the running handler",
    "not_interruptible": "{} aborted, but its plain def handler cannot be interrupted: it "
    "runs on, and its result will be discarded",
    "cancelled": "{} was not running: cancelled",
}


async def retry_dead(app: App, request: Request) -> str:
    client, name = await _type(request)
    try:
        return f"{await retry_all(client, name)} dead tasks of {name} due again"
    except BulkIncomplete as exc:  # the others were retried: say which were not
        return str(exc)


async def delete_dead(app: App, request: Request) -> str:
    client, name = await _type(request)
    try:
        return f"{await cancel_all(client, name, 'dead')} dead tasks of {name} deleted"
    except BulkIncomplete as exc:  # the others were deleted: say which were not
        return str(exc)


async def pause_cron(app: App, request: Request) -> str:
    name = _param(request, "name")
    await app.pause_cron(name)
    return f"cron schedule {name} paused"


async def resume_cron(app: App, request: Request) -> str:
    name = _param(request, "name")
    await app.resume_cron(name)
    return f"cron schedule {name} resumed"


async def pause_type(app: App, request: Request) -> str:
    client, name = await _type(request)
    changed = await client.pause(name)
    return f"{name} paused on every worker" if changed else f"{name} was paused already"


async def resume_type(app: App, request: Request) -> str:
    client, name = await _type(request)
    changed = await client.resume(name)
    return f"{name} resumed" if changed else f"{name} was not paused"


async def trigger_cron(app: App, request: Request) -> str:
    name = _param(request, "name")
    task_id = await app.trigger_cron(name)
    return f"cron schedule {name} runs now, as {task_id}"


ACTIONS: dict[str, Action] = {
    "retry": retry,
    "delete": delete,
    "abort": abort,
    "retry-dead": retry_dead,
    "delete-dead": delete_dead,
    "pause-cron": pause_cron,
    "resume-cron": resume_cron,
    "pause-type": pause_type,
    "resume-type": resume_type,
    "trigger-cron": trigger_cron,
}


def routes(app: App) -> list[Route]:
    def endpoint(action: Action) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            try:
                done = await action(app, request)
            except _BadRequest as exc:
                return PlainTextResponse(str(exc), 400)
            except NotFound as exc:
                return PlainTextResponse(str(exc), 404)
            except DuetimeError as exc:
                return PlainTextResponse(str(exc), 409)
            return RedirectResponse(_back(request, done), 303)

        return run

    return [
        Route(f"/actions/{name}", endpoint(action), methods=["POST"])
        for name, action in ACTIONS.items()
    ]


class _BadRequest(Exception):
    pass


def _param(request: Request, name: str) -> str:
    value = request.query_params.get(name)
    if not value:
        raise _BadRequest(f"missing parameter {name!r}")
    return value


async def _type(request: Request) -> tuple[App, str]:
    """The type the request names, and the app to call about it (the App, or for a type
    only its store knows, the dashboard's view: nothing is declared on the App)."""
    name = _param(request, "type")
    types: TypeNames = request.app.state.types
    return await types.client(name), name


async def _task(request: Request) -> tuple[App, str, str]:
    client, name = await _type(request)
    return client, name, _param(request, "id")


def _back(request: Request, done: str) -> str:
    """The page to go back to (a path of this site only), telling what was done."""
    target = request.query_params.get("next", "/")
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        target = "/"
    path, _, query = target.partition("?")
    path = request.scope.get("root_path", "") + path
    query = "&".join(p for p in query.split("&") if p and p.partition("=")[0] not in flash.PARAMS)
    message = urlencode(request.app.state.flash.params(done))
    query = "&".join(p for p in (query, message) if p)
    return f"{path}?{query}" if query else path
