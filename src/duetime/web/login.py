"""Logging in to the dashboard: ``/login`` takes the token (``GET /login?token=...``, the
link ``duetime dashboard`` prints, or ``POST /login`` from the form the pages show without
a session), sets the cookie and goes back to the page it came from; a wrong or missing
token gets the form again. :mod:`.guard` calls it and has checked the host (and, for a
POST, the origin)."""

from __future__ import annotations

import hmac
from html import escape
from urllib.parse import parse_qs, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

COOKIE = "duetime_token"
#: The most of a login form's body read: a token and its field name fit many times over.
MAX_FORM_BYTES = 4096


async def login(request: Request, expected: str | None) -> Response:
    """The answer to ``/login``: the cookie and a redirect for the right token, else the
    form (401 for a wrong token)."""
    given = request.query_params.get("token")
    if request.method == "POST":
        given = await _form_token(request)
    root = request.scope.get("root_path", "")
    back = safe_next(request.query_params.get("next"))
    if given is None:
        return login_page(root, back, None, 200)
    if expected is None or not equal(given, expected):
        return login_page(root, back, "wrong token", 401)
    response = RedirectResponse(root + back, 303)
    # The cookie goes only to the dashboard: mounted under a prefix, not to the service.
    response.set_cookie(COOKIE, given, httponly=True, samesite="strict", path=root or "/")
    return response


async def _form_token(request: Request) -> str:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return ""
    fields = parse_qs(body.decode("utf-8", "replace"))
    return (fields.get("token") or [""])[0].strip()


def safe_next(target: str | None) -> str:
    """``target`` if it is a path of this site (``/dead?...``), else ``/``: a link cannot
    send someone who logs in to another site."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def login_page(root: str, back: str, problem: str | None, status: int) -> Response:
    """A page with the login form alone: for ``/login`` without the right token, and for
    pages that cannot be read without a session (served beyond loopback)."""
    action = escape(f"{root}/login?{urlencode({'next': back})}")
    said = f'<p class="note" role="alert">{escape(problem)}</p>' if problem else ""
    html = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>duetime · log in</title>
<link rel="stylesheet" href="{escape(root)}/static/duetime.css"></head>
<body><main><h1>Log in to the duetime dashboard</h1>{said}
<p>Give the dashboard's token: <code>duetime dashboard</code> prints it at start, in its
login link (or it is the one its <code>--token</code> or <code>--token-file</code> gives).</p>
{form(action)}</main></body></html>
"""
    return HTMLResponse(html, status)


def form(action: str) -> str:
    """The login form, posting to ``action`` (already escaped); the pages' header shows the
    same form (``templates/_forms.html``)."""
    return (
        f'<form class="login" method="post" action="{action}">'
        '<input type="password" name="token" aria-label="token" placeholder="dashboard token" '
        'autocomplete="current-password" required> '
        '<button type="submit">Log in</button></form>'
    )


def equal(given: str, expected: str) -> bool:
    """Whether ``given`` is the token, compared in constant time."""
    return bool(given) and hmac.compare_digest(given.encode(), expected.encode())
