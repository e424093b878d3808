"""What duetime's Redis client raises: a lost connection (an OSError, as the standard
library's are) or the server's error reply."""

from __future__ import annotations


class ConnectionLost(ConnectionError):
    """The connection could not be made, or broke before the reply came: a command sent on
    it may or may not have run."""


class ReplyError(Exception):
    """An error reply of the server; its message begins with the error's code (``NOSCRIPT``,
    ``READONLY``, ``WRONGTYPE``, ``ERR``...). hiredis makes these from the replies, nested
    ones (in an array) included."""

    @property
    def code(self) -> str:
        return str(self.args[0]).partition(" ")[0] if self.args else ""
