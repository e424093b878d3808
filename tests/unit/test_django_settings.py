"""duetime.contrib.django without a project: the settings it reads, and the arguments
``manage.py duetime`` hands on to the ``duetime`` command."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.core.exceptions import ImproperlyConfigured

from duetime.cli.group import main
from duetime.contrib.django import DuetimeSettings, read_settings
from duetime.contrib.django.forward import forward, without_django_options

APP = "mysite.tasks:app"
URL = "redis://cache:6379/0"


def test_settings_are_read_with_their_defaults() -> None:
    assert read_settings(SimpleNamespace()) == DuetimeSettings(None, None, "default")
    given = SimpleNamespace(DUETIME_URL=URL, DUETIME_APP=APP, DUETIME_NAMESPACE="shop")
    assert read_settings(given) == DuetimeSettings(URL, APP, "shop")


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"DUETIME_URL": 6379}, "DUETIME_URL must be a non-empty string"),
        ({"DUETIME_URL": ""}, "DUETIME_URL must be a non-empty string"),
        ({"DUETIME_APP": "mysite.tasks"}, "DUETIME_APP must be 'module:attribute'"),
        ({"DUETIME_APP": ":app"}, "DUETIME_APP must be 'module:attribute'"),
        ({"DUETIME_NAMESPACE": "a b"}, "DUETIME_NAMESPACE: "),
    ],
)
def test_bad_settings_are_refused_by_name(settings: dict[str, object], named: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=named):
        read_settings(SimpleNamespace(**settings))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        # The project's app goes first after the subcommand, where every command takes it.
        (["worker"], ["worker", APP]),
        (["worker", "--grace", "5"], ["worker", APP, "--grace", "5"]),
        (["ls", "welcome", "--json"], ["ls", APP, "welcome", "--json"]),
        (["--log-level", "debug", "ls"], ["--log-level", "debug", "ls", APP]),
        # An app or a store on the command line wins.
        (["worker", "other.tasks:app"], ["worker", "other.tasks:app"]),
        (["ls", "--app", "other:app"], ["ls", "--app", "other:app"]),
        (["ls", "--url=sqlite:///x.db"], ["ls", "--url=sqlite:///x.db"]),
        (["ls", "--state", "dead", "x:app"], ["ls", "--state", "dead", "x:app"]),
        # No subcommand, or an unknown one: click says what is wrong.
        ([], []),
        (["--help"], ["--help"]),
        (["nosuch"], ["nosuch"]),
    ],
)
def test_the_projects_app_is_added_where_the_command_line_names_none(
    args: list[str], expected: list[str]
) -> None:
    assert forward(main, args, APP, URL, "default") == expected


def test_without_an_app_the_store_url_is_given_to_commands_that_take_one() -> None:
    assert forward(main, ["ls"], None, URL, "shop") == [
        "ls",
        "--url",
        URL,
        "--namespace",
        "shop",
    ]
    # The worker takes no URL: it needs the handlers' code.
    assert forward(main, ["worker"], None, URL, "shop") == ["worker"]
    assert forward(main, ["ls"], None, None, "default") == ["ls"]


def test_managepy_options_are_taken_out() -> None:
    args = ["ls", "--settings", "mysite.settings", "--pythonpath=/srv", "--json"]
    assert without_django_options(args) == ["ls", "--json"]
    assert forward(main, args, APP, None, "default") == ["ls", APP, "--json"]
