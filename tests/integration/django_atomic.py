"""A Django process for the ``connection=django.db.connection`` tests: its database is the
store's (a SQLite file, or a PostgreSQL database); prints what it found, one line a check.

python -m tests.integration.django_atomic STORE_URL sqlite PATH
python -m tests.integration.django_atomic STORE_URL postgresql DATABASE
"""

from __future__ import annotations

import sys

import django
from django.conf import settings

import duetime


def main() -> None:
    url, engine, name = sys.argv[1:4]
    database = {"ENGINE": f"django.db.backends.{engine}", "NAME": name}
    if engine == "postgresql":
        database.update(HOST="127.0.0.1", PORT="5432", USER="postgres")
    settings.configure(DATABASES={"default": database}, USE_TZ=True)
    django.setup()
    from django.db import connection, transaction

    app = duetime.App(url, namespace="tx")
    app.declare("welcome")
    with app.sync() as client:
        client.get("welcome", "none")  # the store open (the file in WAL) before any atomic
        with connection.cursor() as cursor:
            cursor.execute("CREATE TEMPORARY TABLE users (id TEXT)")
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO users VALUES ('u1')")
            client.schedule("welcome", "u1", delay=60, connection=connection)
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("INSERT INTO users VALUES ('u2')")
                client.schedule("welcome", "u2", delay=60, connection=connection)
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
        lines = [
            f"u1 {client.get('welcome', 'u1') is not None}",
            f"u2 {client.get('welcome', 'u2') is not None}",
        ]
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM users ORDER BY id")
            lines.append("users " + ",".join(row[0] for row in cursor.fetchall()))
        sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
