"""A Griffe extension for the documentation site (mkdocs.yml): duetime's docstrings are
Google-style with Sphinx roles (``:class:`~duetime.App` ``), which Markdown would show as
raw text. Each role becomes an optional cross-reference: a link where the object is on the
API page, plain code where it is not (an internal module), and never a build warning.
A paragraph ending in ``::`` (a reStructuredText literal block follows) ends in ``:``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|attr|mod|exc|data|obj):`(~?)\.?([\w.]+)`")
LITERAL = re.compile(r"(?<=[^\s:])::$", re.MULTILINE)


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring of the package once it is loaded (names resolve then)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj, obj.docstring.value)


def _walk(obj: griffe.Object) -> list[griffe.Object]:
    found = [obj]
    for member in obj.members.values():
        if not isinstance(member, griffe.Alias):
            found.extend(_walk(member))
    return found


def rewrite(obj: griffe.Object, text: str) -> str:
    """``text`` with its roles as optional cross-references and ``::`` as ``:``."""

    def link(match: re.Match[str]) -> str:
        short, name = match.group(1), match.group(2)
        shown = name.rsplit(".", 1)[-1] if short else name
        return (
            f'<autoref identifier="{_resolve(obj, name)}" optional><code>{shown}</code></autoref>'
        )

    return LITERAL.sub(":", ROLE.sub(link, text))


def _resolve(obj: griffe.Object, name: str) -> str:
    """The full path of ``name`` as written in ``obj``'s docstring: a dotted path from the
    package as it is, else its first part looked up from ``obj``'s scope."""
    if name.startswith("duetime"):
        return name
    first, _, rest = name.partition(".")
    scope = obj if obj.is_class or obj.is_module else obj.parent
    while scope is not None:
        if first in scope.members:
            member = scope.members[first]
            path = member.target_path if isinstance(member, griffe.Alias) else member.path
            return ".".join(p for p in (path, rest) if p)
        scope = scope.parent
    try:
        return ".".join(p for p in (obj.resolve(first), rest) if p)
    except griffe.NameResolutionError:
        return name
