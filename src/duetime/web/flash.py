"""The line that says what a change did, on the page the change redirects to.

The message travels in the redirect's query string (``done``) with a signature (``sig``),
an HMAC keyed by the dashboard's token. A page shows a message only with a valid signature,
so that a link made elsewhere cannot make the dashboard say what it likes. The key comes
from the token, not from the process, so that every process serving one dashboard (behind
a load balancer) shows the others' messages; without a token there are no changes, so no
messages.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

#: What the key is derived for: the token keys other things (the login cookie) too.
PURPOSE = b"duetime dashboard: the message after a change"
#: The query parameters a message travels in.
PARAMS = ("done", "sig")


class Flash:
    """Signs the messages of changes, and checks them before a page shows one.

    Args:
        token: the dashboard's token; None: no message is signed or shown.
    """

    def __init__(self, token: str | None) -> None:
        self._key = None if token is None else hmac.digest(token.encode(), PURPOSE, "sha256")

    def _sign(self, message: str) -> str:
        assert self._key is not None
        text = message.encode("utf-8", "surrogatepass")  # ids read from a store may hold those
        return hmac.new(self._key, text, hashlib.sha256).hexdigest()

    def params(self, message: str) -> dict[str, str]:
        """The query parameters that carry ``message`` (none without a token)."""
        if self._key is None:
            return {}
        return {"done": message, "sig": self._sign(message)}

    def message(self, query: Mapping[str, str]) -> str | None:
        """The message a page's ``query`` carries, if its signature holds; else None."""
        message, sig = query.get("done"), query.get("sig")
        if self._key is None or not message or not sig:
            return None
        valid = hmac.compare_digest(sig.encode(), self._sign(message).encode())
        return message if valid else None
