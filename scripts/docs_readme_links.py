"""A MkDocs hook (mkdocs.yml): the README is not a page of the site, but it links into
``docs/``; a link to a file that does not exist is a warning, which ``--strict`` (``make
docs``) turns into a failed build, so that renaming a page cannot break the front page."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.readme_links")

LINK = re.compile(r"\]\(([^)\s]+)\)")


def on_pre_build(config: Any, **kwargs: Any) -> None:
    root = Path(config.config_file_path).parent
    for target in broken_links(root / "README.md"):
        log.warning("README.md links to %r, which does not exist", target)


def broken_links(readme: Path) -> list[str]:
    """The relative links of ``readme`` whose file or directory is missing."""
    broken = []
    for target in LINK.findall(readme.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0]
        if not path or "://" in target or target.startswith("mailto:"):
            continue
        if not (readme.parent / path).exists():
            broken.append(target)
    return broken
