"""duetime's pytest plugin (registered as ``duetime``): the ``duetime_harness`` fixture.

A module of its own, outside the ``duetime`` package, so that a pytest run imports nothing
of duetime until a test asks for the fixture: pytest loads the plugins it finds installed
before anything else, pytest-cov's measurement included. ``duetime.testing.pytest_plugin``
is the same plugin under the name duetime documents.

``duetime_harness`` is a :class:`~duetime.testing.Harness` entered for one test, on the app
the ``duetime_app`` fixture returns. Name the app either way:

- define a ``duetime_app`` fixture (in a ``conftest.py``) that returns it; or
- set the ini option ``duetime_app = myproject.tasks:app`` (``MODULE:APP``, imported as
  ``duetime worker`` imports it).

It is an async fixture for tests run by pytest-asyncio (either mode: in strict mode, mark the
test ``@pytest.mark.asyncio``) or by anyio (``@pytest.mark.anyio``), whichever runs the
test. The plugin imports neither: it hands the test pytest-asyncio's kind of fixture
(made with the fixture decorator of the pytest-asyncio plugin pytest loaded) unless the test
is anyio's.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from duetime.app import App
    from duetime.testing.harness import Harness

#: The ini option that names the app (MODULE:APP).
APP_OPTION = "duetime_app"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        APP_OPTION,
        "The duetime.App that the duetime_harness fixture runs, as MODULE:APP (or define "
        "a duetime_app fixture).",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    asyncio_plugin = config.pluginmanager.get_plugin("asyncio")
    # pytest_asyncio.fixture, from the plugin pytest loaded (absent: pytest-asyncio is not
    # installed or is disabled, or some other plugin took the name; no fixture for it then)
    make = getattr(asyncio_plugin, "fixture", None)
    if callable(make) and not config.pluginmanager.has_plugin("duetime-asyncio-fixture"):
        holder = types.ModuleType("duetime.testing.pytest_asyncio_fixture")
        fixture = make(name="duetime_harness_asyncio")(_harness_fixture())
        holder.duetime_harness_asyncio = fixture  # type: ignore[attr-defined]
        config.pluginmanager.register(holder, "duetime-asyncio-fixture")


@pytest.fixture
def duetime_app(request: pytest.FixtureRequest) -> App:
    """The app under test: the one the ini option ``duetime_app`` names (``MODULE:APP``).
    Define a fixture of this name to give another."""
    target = str(request.config.getini(APP_OPTION)).strip()
    if not target:
        pytest.fail(
            "duetime_harness needs the app under test: define a duetime_app fixture that "
            "returns it, or set duetime_app = MODULE:APP in the pytest configuration",
            pytrace=False,
        )
    return _load(target)


@pytest.fixture
def duetime_harness(request: pytest.FixtureRequest) -> Harness:
    """A :class:`~duetime.testing.Harness` on ``duetime_app``, entered for the test: a
    fresh SQLite store in a temporary directory and a clock that moves on ``advance``."""
    if "anyio_backend" in request.fixturenames:  # an anyio test: anyio runs it
        harness: Harness = request.getfixturevalue("duetime_harness_anyio")
        return harness
    if request.config.pluginmanager.has_plugin("duetime-asyncio-fixture"):
        harness = request.getfixturevalue("duetime_harness_asyncio")
        return harness
    pytest.fail(
        "duetime_harness is an async fixture: run the test with pytest-asyncio, or with "
        "anyio (@pytest.mark.anyio)",
        pytrace=False,
    )


def _harness_fixture() -> Callable[[App], AsyncIterator[Harness]]:
    """The harness's async fixture function: a new one each time, since pytest-asyncio's
    decorator marks the function it is given."""

    async def entered(duetime_app: App) -> AsyncIterator[Harness]:
        from duetime.testing.harness import Harness

        async with Harness(duetime_app) as harness:
            yield harness

    return entered


#: The harness as anyio runs it: an async fixture no other plugin claims (pytest-asyncio in
#: strict mode leaves it alone; in auto mode it claims every async fixture, anyio's too).
duetime_harness_anyio = pytest.fixture(name="duetime_harness_anyio")(_harness_fixture())


def _load(target: str) -> App:
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        pytest.fail(f"{APP_OPTION} = {target!r}: expected MODULE:APP", pytrace=False)
    from duetime.app import App

    module = importlib.import_module(module_name)
    app: Any = getattr(module, attribute, None)
    if not isinstance(app, App):
        found = "nothing" if app is None else f"a {type(app).__name__}"
        pytest.fail(f"{APP_OPTION} = {target!r} names {found}, not a duetime.App", pytrace=False)
    return app
