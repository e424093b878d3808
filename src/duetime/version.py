"""duetime's version, in one place (``duetime.__version__``, the workers' records)."""

from __future__ import annotations

VERSION = "0.1.0"
