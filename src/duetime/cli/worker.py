"""``duetime worker``: run the handlers of an app until SIGTERM or SIGINT."""

from __future__ import annotations

import click

from duetime.cli.target import load_app
from duetime.cli.values import Seconds
from duetime.errors import DuetimeError
from duetime.probes.health import DEFAULT_HEALTH_INTERVAL


@click.command()
@click.argument("app_path", metavar="MODULE:APP")
@click.option("--type", "types", multiple=True, help="Run only these task types (repeatable).")
@click.option(
    "--grace",
    type=Seconds(minimum=0),
    default=30.0,
    show_default=True,
    help="Seconds running handlers get to finish after SIGTERM or SIGINT.",
)
@click.option(
    "--no-gc-tuning",
    is_flag=True,
    help="Leave Python's garbage collector as it is (by default the worker freezes its "
    "start-up objects and collects young objects every 10,000 allocations).",
)
@click.option(
    "--metrics",
    "metrics_port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Serve Prometheus metrics on this port (needs duetime[metrics]).",
)
@click.option(
    "--metrics-host",
    default="127.0.0.1",
    show_default=True,
    help="The interface to serve metrics on.",
)
@click.option(
    "--health-port",
    type=click.IntRange(0, 65535),
    metavar="PORT",
    help="Answer GET /healthz and /readyz on this port (the metrics port too: one server).",
)
@click.option(
    "--health-host",
    help="The interface to answer health checks on  [default: 127.0.0.1, or --metrics-host "
    "on the metrics port]",
)
@click.option(
    "--health-interval",
    type=Seconds(minimum=0.1),
    default=DEFAULT_HEALTH_INTERVAL,
    show_default=True,
    help="Seconds the store may go without answering before /healthz answers 503.",
)
@click.option(
    "--burst",
    is_flag=True,
    help="Run what is due now, then exit once nothing is due and nothing runs: exit code 0, "
    "or 1 if a task ended in the dead letters meanwhile (for CI jobs and cron-started "
    "workers).",
)
def worker(
    app_path: str,
    types: tuple[str, ...],
    grace: float,
    no_gc_tuning: bool,
    metrics_port: int | None,
    metrics_host: str,
    health_port: int | None,
    health_host: str | None,
    health_interval: float,
    burst: bool,
) -> None:
    """Run a worker for every task type of MODULE:APP until SIGTERM or SIGINT (with
    --burst, until nothing is due)."""
    app = load_app(app_path)
    try:
        ran = app.run(
            list(types) or None,
            grace=grace,
            gc_tuning=not no_gc_tuning,
            metrics_port=metrics_port,
            metrics_host=metrics_host,
            health_port=health_port,
            health_host=health_host,
            health_interval=health_interval,
            burst=burst,
        )
    except DuetimeError as exc:
        raise click.ClickException(str(exc)) from None
    if burst and ran.dead_lettered:
        click.echo(f"{ran.dead_lettered} task(s) ended in the dead letters", err=True)
        raise SystemExit(1)
