"""Who may do what on the dashboard: one middleware that checks every request.

- **Host.** Served on loopback, only requests naming a loopback host, or one of the
  allowed hosts (a service's own names), are answered, so that a web page cannot reach the
  dashboard through a DNS name rebound to its address.
- **Token.** Changes (every POST) need the dashboard's token: from the cookie that
  ``/login`` sets (HttpOnly, SameSite=Strict; :mod:`.login`), or an ``Authorization:
  Bearer`` header for scripts. Served beyond loopback, reading needs it too: a page asked
  for without it is the login form. Whether a request carries the token is told to the
  pages (``request.state.session``), which show the login form rather than buttons
  without it.
- **Origin.** A change carrying the cookie must come from the dashboard's own pages: its
  ``Origin`` (or, without one, its ``Referer``) must be the dashboard's, and a browser's
  ``Sec-Fetch-Site`` must not say another site sent it. A page elsewhere cannot make the
  browser change anything, even with the cookie.
- **Read-only.** Every change is refused.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from duetime.errors import ValidationError
from duetime.web.login import COOKIE, equal, login, login_page

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
#: The requests that change nothing.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: A host name as allowed_hosts takes it (lower-cased): labels of letters, digits, "-" and
#: "_" (which some internal names use), between dots.
HOST_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


@dataclass(frozen=True, slots=True)
class Access:
    """The dashboard's rules.

    Attributes:
        token: what a change must carry; None: no change is allowed.
        read_only: refuse every change.
        reads_need_token: reading needs the token too (served beyond loopback).
        loopback_only: answer only requests that name a loopback host (or an allowed one).
        allowed_hosts: host names answered besides loopback ones, whatever
            ``loopback_only`` says: a name (``ops.example.com``), an IP address, or
            ``*.example.com`` for every name under ``example.com`` (not ``example.com``
            itself). Matched without the port, ignoring case. When not empty, a request
            naming any other host is refused.
    """

    token: str | None
    read_only: bool = False
    reads_need_token: bool = False
    loopback_only: bool = True
    allowed_hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_hosts", host_patterns(self.allowed_hosts))

    def answers(self, host: str) -> bool:
        """Whether a request whose Host header names ``host`` is answered."""
        if not self.loopback_only and not self.allowed_hosts:
            return True
        name = host_of(host)
        return is_loopback(name) or any(_matches(name, p) for p in self.allowed_hosts)


def host_patterns(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as :attr:`Access.allowed_hosts` keeps them: lower-cased, without a final dot
    or the brackets of an IPv6 address.

    Raises:
        ValidationError: a name that is not a host name, an IP address or ``*.`` and a
            host name (``*`` alone would answer every host: list the names instead).
    """
    if isinstance(names, str):
        raise ValidationError("allowed_hosts", "must be a list of host names, not a string")
    patterns = []
    for raw in names:
        name = raw.strip().lower().rstrip(".") if isinstance(raw, str) else ""
        if name.startswith("[") and name.endswith("]"):  # an IPv6 address as a URL writes it
            name = name[1:-1]
            valid = _is_address(name)
        else:
            bare = name.removeprefix("*.")
            valid = bool(HOST_NAME.fullmatch(bare)) or (bare == name and _is_address(name))
        if not valid:
            raise ValidationError(
                "allowed_hosts",
                f"{raw!r} is not a host name, an IP address or *.name (give names "
                "without a port or scheme; '*' alone is refused: it would undo the "
                "protection against DNS rebinding)",
            )
        patterns.append(name)
    return tuple(patterns)


def host_of(header: str) -> str:
    """The host a Host header names: without its port, lower-cased, without a final dot;
    an IPv6 address without its brackets (``[::1]:8787`` is ``::1``)."""
    host = header.strip().lower()
    if host.startswith("["):  # an IPv6 address, perhaps with a port
        end = host.find("]")
        return host[1:end] if end > 0 else host
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def _matches(host: str, pattern: str) -> bool:
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return host == pattern


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address, as given to bind) is this machine only."""
    if host.strip("[]") in LOOPBACK_NAMES or host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Guard:
    """ASGI middleware that applies :class:`Access` to every HTTP request."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        refusal = self.check(request)
        if refusal is None and local_path(request) == "/login":
            refusal = await login(request, self.access.token)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        scope.setdefault("state", {})["session"] = self.token_of(request) is not None
        await self.app(scope, receive, send)

    def check(self, request: Request) -> Response | None:
        access = self.access
        host = request.headers.get("host") or ""
        if not access.answers(host):
            return PlainTextResponse(
                f"refused: host {host_of(host)!r} is not this machine or an allowed host", 421
            )
        path = local_path(request)
        if request.method in SAFE_METHODS:
            open_path = path == "/login" or path.startswith("/static/")
            if access.reads_need_token and not open_path and self.token_of(request) is None:
                back = path + (f"?{request.url.query}" if request.url.query else "")
                return login_page(request.scope.get("root_path", ""), back, None, 401)
            return None
        if path == "/login":  # a POST that carries the token (the form), from the own pages
            same = same_origin(request)
            return None if same else PlainTextResponse("refused: from another site", 403)
        if access.read_only:
            return PlainTextResponse("refused: the dashboard is read-only", 403)
        carried = self.token_of(request)
        if carried is None:
            return PlainTextResponse("refused: a change needs the dashboard's token", 401)
        if carried == "cookie" and not same_origin(request):
            return PlainTextResponse("refused: the request came from another site", 403)
        return None

    def token_of(self, request: Request) -> str | None:
        """How the request carries the right token ("cookie" or "bearer"), or None."""
        expected = self.access.token
        if expected is None:
            return None
        auth = request.headers.get("authorization", "")
        if auth.lower().startswith("bearer ") and equal(auth[7:].strip(), expected):
            return "bearer"
        if equal(request.cookies.get(COOKIE, ""), expected):
            return "cookie"
        return None


def local_path(request: Request) -> str:
    """The request's path within the dashboard (which may be mounted under a prefix)."""
    path: str = request.scope["path"]
    root: str = request.scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def same_origin(request: Request) -> bool:
    """Whether the browser says the request came from the dashboard's own pages."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return False
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    origin = request.headers.get("origin")
    if origin is not None:
        return origin == own
    referer = request.headers.get("referer")
    if referer is None:
        return False
    parts = urlsplit(referer)
    return f"{parts.scheme}://{parts.netloc}" == own
