"""A task's metadata (``meta=``): a small JSON object beside the payload, for the code
around the handler (middleware, tracing, the dashboard) rather than the handler's own
input; checked here, kept in the task's record (:mod:`duetime.record`, field ``md``)."""

from __future__ import annotations

import json
from typing import Any

from duetime.errors import PayloadError, ValidationError
from duetime.validate import encode_payload

#: The most a task's metadata may take as JSON: it rides in every copy of the record (each
#: retry, each occurrence, each dead letter), so it is kept small.
MAX_META_BYTES = 4096


def encode_meta(meta: object) -> str | None:
    """The JSON text of ``meta`` as the record keeps it (None for none, or an empty one).

    Raises:
        ValidationError: not a dict of string keys and JSON values, or over
            :data:`MAX_META_BYTES` as JSON (field ``meta``).
    """
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise ValidationError("meta", f"must be a dict (a JSON object), not {type(meta).__name__}")
    if not meta:
        return None
    try:
        return encode_payload(meta, MAX_META_BYTES, "meta")
    except PayloadError as exc:
        raise ValidationError("meta", exc.problem) from None


def shown_meta(meta_json: str | None) -> dict[str, Any]:
    """A task's metadata as code is given it: a new dict each time ({} for none)."""
    if meta_json is None:
        return {}
    value: dict[str, Any] = json.loads(meta_json)
    return value
