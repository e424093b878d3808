"""A Django process for the ``schedule_on_commit`` test: the project's database is a SQLite
file, the store another (Redis); prints what it found, one line a check.

python -m tests.integration.django_on_commit STORE_URL PATH
"""

from __future__ import annotations

import sys

import django
from django.conf import settings

import duetime


def main() -> None:
    url, path = sys.argv[1:3]
    database = {"ENGINE": "django.db.backends.sqlite3", "NAME": path}
    settings.configure(DATABASES={"default": database}, USE_TZ=True)
    django.setup()
    from django.db import transaction

    from duetime.contrib.django.oncommit import schedule_on_commit

    app = duetime.App(url, namespace="tx")
    app.declare("welcome")
    lines = []
    with app.sync() as client:
        with transaction.atomic():
            got = schedule_on_commit("welcome", "u1", delay=60, client=client)
            lines.append(f"inside {client.get('welcome', 'u1') is not None} {got}")
        lines.append(f"committed {client.get('welcome', 'u1') is not None}")
        try:
            with transaction.atomic():
                schedule_on_commit("welcome", "u2", delay=60, client=client)
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
        lines.append(f"rolled back {client.get('welcome', 'u2') is not None}")
        schedule_on_commit("welcome", "u3", client=client)  # no transaction: at once
        lines.append(f"outside {client.get('welcome', 'u3') is not None}")
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
