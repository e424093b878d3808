"""``manage.py duetime ...``: the ``duetime`` command (``duetime --help``) inside the
project, after ``django.setup()``, on the App of ``DUETIME_APP`` (or the store of
``DUETIME_URL``) unless the command line names another."""

from __future__ import annotations

import argparse
import os
from typing import Any

import click
from django.core.management.base import BaseCommand, CommandError, CommandParser

from duetime.cli.group import main
from duetime.contrib.django.conf import read_settings
from duetime.contrib.django.forward import forward


class Command(BaseCommand):
    help = (
        "duetime's command line, on the project's App (DUETIME_APP) or store (DUETIME_URL): "
        "manage.py duetime worker, manage.py duetime ls, ... (manage.py duetime --help)"
    )

    def run_from_argv(self, argv: list[str]) -> None:
        """Hand everything after ``duetime`` to duetime's command (which exits with its own
        code): Django's parser would take ``--help`` and refuse duetime's options."""
        conf = read_settings()
        args = forward(main, argv[2:], conf.app, conf.url, conf.namespace)
        main.main(args, prog_name=f"{os.path.basename(argv[0])} {argv[1]}")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("args", nargs=argparse.REMAINDER, help="duetime's arguments")

    def handle(self, *args: Any, **options: Any) -> None:
        """For ``call_command("duetime", "ls", ...)``: runs the command in this process; an
        error or an exit code other than 0 raises CommandError with duetime's message and
        code."""
        conf = read_settings()
        try:
            code = main.main(
                forward(main, list(args), conf.app, conf.url, conf.namespace),
                prog_name="duetime",
                standalone_mode=False,
            )
        except click.ClickException as exc:
            raise CommandError(exc.format_message(), returncode=exc.exit_code) from None
        except click.exceptions.Exit as exc:
            code = exc.exit_code
        if isinstance(code, int) and code != 0:
            raise CommandError(f"duetime exited with code {code}", returncode=code)
