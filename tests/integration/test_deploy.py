"""The files under deploy/ (no Docker, systemd or Kubernetes here): each parses, names a
``duetime`` command whose options exist (parsed by the command itself), gives a stop
longer than the worker's --grace, and points its health checks at the port and paths the
worker serves; docs/deploy.md shows them as they are."""

from __future__ import annotations

import configparser
import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import click
import yaml

from duetime.cli.group import main
from duetime.probes.health import HEALTH_PATH, READY_PATH

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def parse_command(argv: list[str], name: str) -> dict[str, Any]:
    """The parameters of ``duetime <name> ...`` as the command itself reads them; fails on
    an option that does not exist or a bad value."""
    assert Path(argv[0]).name == "duetime", argv
    assert argv[1] == name, argv
    command = main.commands[name]
    with command.make_context(name, list(argv[2:])) as ctx:
        return dict(ctx.params)


def worker_command(argv: list[str]) -> dict[str, Any]:
    params = parse_command(argv, "worker")
    assert params["app_path"] == "myproject.tasks:app"
    assert params["health_port"] is not None, "no health checks"
    return params


def health_host(params: dict[str, Any]) -> str:
    """Where the worker of ``params`` answers health checks."""
    if params["health_port"] == params["metrics_port"]:
        return str(params["metrics_host"])
    return str(params["health_host"] or "127.0.0.1")


def seconds(value: str) -> float:
    """A compose duration (``40s``, ``1m30s``) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", value)
    assert parts is not None and value, value
    return float(sum(int(n) * u for n, u in zip(parts.groups(), units.values(), strict=True) if n))


def test_duetime_is_the_packages_command() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["duetime"] == "duetime.cli:main"


def test_the_systemd_unit_runs_a_worker_and_waits_longer_than_its_grace() -> None:
    unit = configparser.ConfigParser(interpolation=None)
    unit.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    unit.read_string((DEPLOY / "duetime-worker.service").read_text())
    service = unit["Service"]
    params = worker_command(shlex.split(service["ExecStart"]))
    assert service["ExecStart"].startswith(service["WorkingDirectory"])  # its venv
    assert service["KillSignal"] == "SIGTERM"
    assert float(service["TimeoutStopSec"]) > params["grace"]
    assert service["Restart"] == "always"
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_the_dockerfile_runs_a_worker_reachable_from_outside_the_container() -> None:
    lines = (DEPLOY / "Dockerfile").read_text().splitlines()
    instructions = dict(
        line.split(" ", 1) for line in lines if line and not line.startswith(("#", " "))
    )
    params = worker_command(json.loads(instructions["CMD"]))
    assert instructions["STOPSIGNAL"] == "SIGTERM"
    assert instructions["EXPOSE"] == str(params["health_port"])
    assert health_host(params) == "0.0.0.0"


def test_the_compose_file_runs_redis_workers_and_the_dashboard() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"redis", "worker", "dashboard"}
    assert "noeviction" in services["redis"]["command"]  # duetime refuses an evicting Redis

    worker = services["worker"]
    params = worker_command(worker["command"])
    assert seconds(worker["stop_grace_period"]) > params["grace"]
    assert worker["environment"]["DUETIME_URL"] == "redis://redis:6379/0"
    probe = " ".join(worker["healthcheck"]["test"])
    assert f"http://127.0.0.1:{params['health_port']}{HEALTH_PATH}" in probe
    assert worker["depends_on"]["redis"]["condition"] == "service_healthy"

    dashboard = services["dashboard"]
    options = parse_command(dashboard["command"], "dashboard")
    assert options["host"] == "0.0.0.0"  # in its container; the port is published on loopback
    assert dashboard["ports"] == [f"127.0.0.1:{options['port']}:{options['port']}"]
    assert "DUETIME_DASHBOARD_TOKEN" in dashboard["environment"]  # required beyond loopback


def test_the_kubernetes_deployment_probes_the_workers_health_checks() -> None:
    documents = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "worker.yaml").read_text()))
    kinds = {doc["kind"]: doc for doc in documents}
    assert set(kinds) == {"Deployment", "PodDisruptionBudget"}
    deployment = kinds["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    params = worker_command(container["command"])
    # The kubelet probes the pod's address: the checks must listen beyond loopback.
    assert health_host(params) == "0.0.0.0"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe, path in (("livenessProbe", HEALTH_PATH), ("readinessProbe", READY_PATH)):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert ports.get(get["port"], get["port"]) == params["health_port"]
    assert pod["terminationGracePeriodSeconds"] > params["grace"]
    assert container["env"][0]["name"] == "DUETIME_URL"
    labels = deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["template"]["metadata"]["labels"] == labels
    assert kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"] == labels


def test_an_unknown_option_in_a_deploy_file_would_fail_these_tests() -> None:
    try:
        worker_command(["duetime", "worker", "myproject.tasks:app", "--health-prot", "9100"])
    except click.NoSuchOption:
        return
    raise AssertionError("a misspelt option was accepted")


def test_the_deploy_page_shows_every_file_as_it_is() -> None:
    page = (ROOT / "docs" / "deploy.md").read_text()
    shown: dict[str, str] = {}
    for section in page.split("\n### ")[1:]:
        heading, _, body = section.partition("\n")
        named = re.search(r"`deploy/([^`]+)`", heading)
        if named is None:
            continue
        block = re.search(r"^```\w*\n(.*?)^```$", body, re.S | re.M)
        assert block is not None, heading
        shown[named.group(1)] = block.group(1)
    files = {
        str(path.relative_to(DEPLOY)): path.read_text()
        for path in DEPLOY.rglob("*")
        if path.is_file()
    }
    assert shown == files
