"""A store's files are read from its package's folder on disk, and from wherever
importlib.resources finds them otherwise (a package inside a zip file)."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from duetime.stores.packaged import folder


def test_a_package_on_disk_gives_its_folder_itself() -> None:
    sql = folder("duetime.stores.sqlite", "sql")
    assert isinstance(sql, Path) and sql.is_dir()
    assert (sql / "count_states.sql").read_text().startswith("-- count_states:")


def test_a_package_in_a_zip_file_gives_what_importlib_resources_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("zipped_pkg/__init__.py", "")
        z.writestr("zipped_pkg/sql/one.sql", "SELECT 1;\n")
    monkeypatch.syspath_prepend(str(archive))
    monkeypatch.delitem(sys.modules, "zipped_pkg", raising=False)
    found = folder("zipped_pkg", "sql")
    assert not isinstance(found, Path)
    assert [entry.name for entry in found.iterdir()] == ["one.sql"]
    assert (found / "one.sql").read_text() == "SELECT 1;\n"
