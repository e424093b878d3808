"""The values ``duetime`` options take that click's own types do not check: durations
(``90``, ``90s``, ``5m``, ``2h``, ``1d``, ``PT5M``), times (ISO 8601 with an offset) and
JSON payloads. One parser each, used by every option that takes one, so that a bad value
exits 2 naming its option before anything is read or written."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    ParamBase = click.ParamType[Any]  # generic from click 8.4 on; not subscriptable before
else:
    ParamBase = click.ParamType

#: The longest span an option may give: 10,000 years, in seconds. Any longer one reaches
#: past the year 9999, the last time duetime keeps, so the App would refuse it anyway;
#: checked here because some (1e300) do not even fit a timedelta.
MAX_SECONDS = 10_000 * 365.25 * 86_400
#: The most items an option may ask a store for: its counts are 64-bit integers.
MAX_COUNT = 2**63 - 1
#: The most run times ``cron --next`` computes: each takes about 10 µs, so a count in the
#: billions would keep the command busy for hours, printing more than anyone reads.
MAX_NEXT_RUNS = 1000

#: Seconds in each unit a duration may use (``1h30m`` combines them).
UNITS = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
_NUMBER = r"\d+(?:\.\d+)?"
_WITH_UNITS = re.compile(rf"(?:{_NUMBER}[dhms])+")
_PART = re.compile(rf"({_NUMBER})([dhms])")
#: ISO 8601 durations of fixed length: weeks, days, hours, minutes, seconds (a decimal
#: comma is ISO's own). Years and months are caught apart, to say why they are refused.
_ISO = re.compile(
    r"P(?:(?P<w>\d+(?:[.,]\d+)?)W)?(?:(?P<d>\d+(?:[.,]\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:[.,]\d+)?)H)?(?:(?P<m>\d+(?:[.,]\d+)?)M)?(?:(?P<s>\d+(?:[.,]\d+)?)S)?)?"
)
_ISO_SECONDS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
DURATION_FORMS = "seconds (90), 90s, 5m, 2h, 1d, 1h30m, or ISO 8601 (PT5M)"
TIME_EXAMPLE = "2030-01-02T09:00:00Z"


def parse_duration(text: str) -> float:
    """The seconds ``text`` gives: a number of seconds (``90``, ``1.5``), numbers with units
    (``90s``, ``5m``, ``2h``, ``1d``, ``1h30m``) or an ISO 8601 duration (``PT5M``,
    ``P1DT2H``), with an optional sign.

    Raises:
        ValueError: anything else, saying what is taken.
    """
    body = text.strip()
    try:
        return float(body)  # inf and nan are refused by the caller, with their reason
    except ValueError:
        pass
    sign = -1.0 if body.startswith("-") else 1.0
    body = body[1:] if body[:1] in ("-", "+") else body
    lower = body.lower()
    if _WITH_UNITS.fullmatch(lower):
        return sign * sum(float(n) * UNITS[u] for n, u in _PART.findall(lower))
    upper = body.upper()
    if upper.startswith("P"):
        return sign * _iso_seconds(text, upper)
    raise ValueError(f"{text!r} is not a duration: give {DURATION_FORMS}")


def _iso_seconds(text: str, upper: str) -> float:
    found = _ISO.fullmatch(upper)
    if found is None or upper in ("P", "PT") or upper.endswith("T"):
        date_part = upper.partition("T")[0]
        if "Y" in date_part or "M" in date_part:
            raise ValueError(
                f"{text!r}: years and months have no fixed length; give days (P30D), or "
                "for minutes put them after T (PT5M)"
            )
        raise ValueError(f"{text!r} is not an ISO 8601 duration such as PT5M, PT1H30M or P1D")
    return sum(
        float(value.replace(",", ".")) * _ISO_SECONDS[unit]
        for unit, value in found.groupdict().items()
        if value is not None
    )


def parse_time(text: str) -> datetime:
    """The moment ``text`` names: ISO 8601 with a time zone offset or ``Z``.

    Raises:
        ValueError: not ISO 8601, or a time without an offset (naive: it would mean a
            different moment on each machine).
    """
    try:
        moment = datetime.fromisoformat(text.strip().upper())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time, e.g. {TIME_EXAMPLE}") from None
    if moment.tzinfo is None:
        example = moment.isoformat() + "Z"
        raise ValueError(
            f"{text!r} has no time zone: add Z or +00:00 ({example}), or its own offset"
        )
    return moment


class Seconds(ParamBase):
    """A duration, as :func:`parse_duration` reads it, in seconds: finite, at most
    :data:`MAX_SECONDS` either way.

    Args:
        minimum: the smallest value taken (None: the App checks the sign).
    """

    name = "duration"

    def __init__(self, minimum: float | None = None) -> None:
        self.minimum = minimum

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)  # a default given as a number
        else:
            try:
                seconds = parse_duration(str(value))
            except ValueError as exc:
                self.fail(str(exc), param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{value!r}: must be a finite number of seconds", param, ctx)
        if abs(seconds) > MAX_SECONDS:
            limit = f"must be at most {MAX_SECONDS:.0f} seconds (10,000 years)"
            self.fail(f"{value!r}: {limit}", param, ctx)
        if self.minimum is not None and seconds < self.minimum:
            self.fail(f"{value!r}: must be {self.minimum:g} seconds or more", param, ctx)
        return seconds


class Moment(ParamBase):
    """A time, as :func:`parse_time` reads it: ISO 8601 with an offset."""

    name = "time"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            return parse_time(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


_JSON_KINDS = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}


class JsonObject(ParamBase):
    """A JSON object (a task's payload); an error says where the JSON went wrong."""

    name = "json"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> dict[str, Any]:
        if isinstance(value, dict):
            return value
        try:
            doc = json.loads(value)
        except json.JSONDecodeError as exc:
            self.fail(f"invalid JSON at char {exc.pos}: {exc.msg}", param, ctx)
        if not isinstance(doc, dict):
            kind = _JSON_KINDS.get(type(doc), "a number")
            self.fail(f'must be a JSON object such as {{"to": "a@b.c"}}, not {kind}', param, ctx)
        return doc


#: One calendar step's parts: a whole number and its unit (days, weeks, months, years).
_SPAN_PART = re.compile(r"(\d+)\s*(mo|d|w|y)")
_SPAN_UNITS = {"d": "days", "w": "weeks", "mo": "months", "y": "years"}


class CalendarSpan(ParamBase):
    """A calendar step, as ``--every-calendar`` takes it: whole numbers of days (``d``),
    weeks (``w``), months (``mo``) or years (``y``), such as ``7d``, ``2w``, ``1mo`` or
    ``1y6mo``: the fields of a :class:`~duetime.CalendarInterval` (its zone comes apart)."""

    name = "span"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> dict[str, int]:
        text = str(value).strip().lower()
        parts = _SPAN_PART.findall(text)
        if not parts or "".join(f"{n}{unit}" for n, unit in parts) != re.sub(r"\s+", "", text):
            self.fail(
                f"{value!r}: give whole days, weeks, months or years: 7d, 2w, 1mo, 1y", param, ctx
            )
        fields: dict[str, int] = {}
        for number, unit in parts:
            field = _SPAN_UNITS[unit]
            fields[field] = fields.get(field, 0) + int(number)
        return fields
