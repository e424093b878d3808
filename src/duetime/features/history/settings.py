"""How much of the run history each task type keeps: the app's setting and the type's own
(:class:`~duetime.model.History`), resolved for the types a worker runs."""

from __future__ import annotations

from duetime.errors import ValidationError
from duetime.model import History

#: Task types named so are duetime's own (a poller's calls, the layout record): their runs
#: are not recorded, whatever the app's setting.
INTERNAL_PREFIX = "duetime."

#: A history setting as the app and the task options take it: a History, True for the
#: defaults, False for none (None, per type: the app's).
Setting = History | bool | None


def check_setting(field: str, value: object) -> Setting:
    """``value`` if it is a history setting; raises ValidationError naming ``field``."""
    if value is None or isinstance(value, History | bool):
        return value
    raise ValidationError(field, "must be a duetime.History, True or False")


def resolve(own: Setting, app: History | bool) -> History | None:
    """A type's history: its own setting, else the app's; None when it keeps none."""
    chosen = app if own is None else own
    if chosen is True:
        return History()
    return chosen or None
