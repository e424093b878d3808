"""The dashboard: a Starlette app over a duetime App, to serve with ``duetime dashboard``
or to mount in a service of your own::

    from duetime.web import create_app
    dashboard = create_app(app, token="...", allowed_hosts=["ops.example.com"])  # ASGI
    service.mount("/duetime", dashboard)               # Starlette / FastAPI

Pages are rendered on the server (Jinja2, autoescaped); htmx refreshes them in place and
uPlot draws the charts, both shipped in ``static/`` (nothing is fetched from elsewhere).
Needs the ``web`` extra: ``pip install 'duetime[web]'``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Iterable
from datetime import datetime, timedelta
from html import escape
from importlib import resources
from typing import Any
from urllib.parse import urlencode

try:
    import jinja2
    from markupsafe import Markup
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles
    from starlette.templating import Jinja2Templates
except ImportError as exc:  # pragma: no cover - the extra is part of dev
    raise ImportError("the dashboard needs the web extra: pip install 'duetime[web]'") from exc

from duetime.app import App
from duetime.web import actions, login, pages, scrape
from duetime.web.data import TypeNames
from duetime.web.flash import Flash
from duetime.web.guard import Access, Guard, host_patterns, is_loopback

__all__ = ["Access", "create_app", "is_loopback", "new_token"]


def new_token() -> str:
    """A fresh token for the dashboard's changes."""
    return secrets.token_urlsafe(24)


def create_app(
    app: App,
    *,
    token: str | None = None,
    read_only: bool = False,
    access: Access | None = None,
    close_app: bool = False,
    allowed_hosts: Iterable[str] = (),
    reads_need_token: bool | None = None,
) -> Guard:
    """The dashboard of ``app`` as an ASGI app.

    The dashboard never changes ``app``: a task type the app does not know is read from
    the store without being declared on it, and a name neither knows is not found (404).

    Args:
        app: the App whose store to show (with its code, its cron schedules, pollers and
            expiring groups show too).
        token: what a change (retry, delete, pause) must carry; without one, changes are
            refused (as with ``read_only``).
        read_only: refuse every change.
        access: the full rules instead of ``token``, ``read_only`` and ``allowed_hosts``
            (see :class:`~duetime.web.guard.Access`); ``duetime dashboard`` sets them
            from where it listens.
        close_app: close ``app`` when the server shuts down (when the dashboard owns it).
        allowed_hosts: the host names the dashboard answers besides loopback ones (the
            service's own names): ``"ops.example.com"``, an IP address, or
            ``"*.example.com"`` for every name under it. A request naming another host is
            refused (421), so that a web page cannot reach the dashboard through a DNS
            name rebound to the service's address.
        reads_need_token: whether reading a page needs the token too (a login page asks
            for it). By default it does when the dashboard has a token and answers names
            beyond loopback (``allowed_hosts``), as ``duetime dashboard`` does when it
            listens beyond loopback: payloads and errors are often not for everyone.
            False keeps the pages open to whoever reaches them.

    Raises:
        ValidationError: a bad entry in ``allowed_hosts``.
    """
    if access is None:
        hosts = host_patterns(allowed_hosts)
        if reads_need_token is None:
            reads_need_token = token is not None and bool(hosts)
        access = Access(
            token=token,
            read_only=read_only or token is None,
            reads_need_token=reads_need_token,
            allowed_hosts=hosts,
        )
    folder = resources.files("duetime.web")
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("duetime.web", "templates"), autoescape=True
    )
    templates = Jinja2Templates(env=env)
    env.globals.update(
        task_url=pages.task_url,
        type_url=pages.type_url,
        qs=_query,
        inf=float("inf"),
        login_form=_login_form,
    )
    env.filters.update(when=_when, tojson_safe=_json, pretty=_pretty, took=_took)
    type_names = TypeNames(app)
    routes = [
        # Without a token no change can be made, so the pages offer neither buttons nor login.
        *pages.routes(app, templates, access.read_only or access.token is None),
        *actions.routes(app),
        *scrape.routes(app, type_names),
        Mount("/static", StaticFiles(directory=str(folder / "static")), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            if close_app:
                await app.close()

    dashboard = Starlette(routes=routes, lifespan=lifespan)
    dashboard.state.types = type_names
    dashboard.state.flash = Flash(None if access.read_only else access.token)
    return Guard(dashboard, access)


def _when(moment: datetime | None) -> str:
    return "—" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _took(span: timedelta | None) -> str:
    """How long a run took, in ms (or s from 10 s)."""
    if span is None:
        return "—"
    seconds = span.total_seconds()
    return f"{seconds:.1f} s" if seconds >= 10 else f"{seconds * 1000:g} ms"


def _login_form(action: str) -> Markup:
    return Markup(login.form(escape(action)))


def _query(**params: Any) -> str:
    return urlencode(params)


def _pretty(value: Any) -> str:
    """A payload as indented JSON, to show as text (the template escapes it)."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _json(value: Any) -> str:
    """``value`` as JSON for a data- attribute (autoescaped by the template)."""
    return json.dumps(value, ensure_ascii=False, default=str)
