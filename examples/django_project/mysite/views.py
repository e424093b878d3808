"""Views that schedule through the process's blocking client (any view, sync or async
under ASGI, may use it; async views under ASGI may also await the App directly)."""

from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET, require_POST

from duetime.contrib.django import sync_client


@require_POST
def sign_up(request: HttpRequest) -> JsonResponse:
    """Send the welcome mail ``delay`` seconds from now (signing up twice moves it)."""
    email = request.POST["email"]
    delay = timedelta(seconds=float(request.POST.get("delay", "60")))
    due = sync_client().schedule("welcome", email, payload={"email": email}, delay=delay)
    return JsonResponse({"task": email, "due": due.isoformat()}, status=202)


@require_GET
def signup_state(request: HttpRequest, email: str) -> JsonResponse:
    """Where the welcome mail is: due, running, dead, or sent (finished tasks are not kept)."""
    info = sync_client().get("welcome", email)
    return JsonResponse({"task": email, "state": "sent" if info is None else info.state})
