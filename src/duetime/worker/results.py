"""What the run history keeps of a handler's return value: its result, as JSON text
(docs/workflows.md, "Results"). Only the types that keep a history keep results, and a
handler that returns None costs nothing here (no call)."""

from __future__ import annotations

import json

from duetime.errors import Abort

#: The most bytes of UTF-8 a result's JSON may take (64 KiB); a larger one sends the task to
#: the dead letters, with a reason naming its size.
MAX_RESULT_BYTES = 65536

_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode


def kept(value: object) -> str:
    """The JSON text of ``value``, a handler's result (not None).

    Raises:
        Abort: it is not JSON (a dict with text keys, a list, a str, a number, a bool or
            None, nested), or its JSON is over :data:`MAX_RESULT_BYTES`: the task goes to
            the dead letters with that reason, as if the handler had raised it.
    """
    try:
        text = _encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise Abort(f"result is not JSON: {exc}") from None
    if len(text) > MAX_RESULT_BYTES // 4 and len(size := text.encode()) > MAX_RESULT_BYTES:
        raise Abort(
            f"result too big: {len(size):,} bytes of JSON, at most {MAX_RESULT_BYTES:,} (64 KiB)"
        )
    return text
