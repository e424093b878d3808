"""Behind Sentinel, the data nodes and the sentinels each take TLS (a private CA, a client
certificate, verification on or off) and credentials of their own, from the URL: a worker
runs through a sentinel that speaks TLS only to clients with a certificate and takes an
ACL user, to a primary that speaks TLS only to clients with a certificate."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
import redis

import duetime
from tests.servers import RedisServer, SentinelServer, free_port
from tests.tls import Certificates, make_certificates

pytestmark = pytest.mark.timeout(60)

SERVICE = "secure"


class Secured(NamedTuple):
    sentinel_tls_port: int
    certs: Certificates


def _tls_args(certs: Certificates, port: int) -> list[str]:
    return [
        "--tls-port",
        str(port),
        "--tls-cert-file",
        str(certs.cert),
        "--tls-key-file",
        str(certs.key),
        "--tls-ca-cert-file",
        str(certs.ca),
        "--tls-auth-clients",
        "yes",
    ]


def _watching(sentinel: SentinelServer, timeout: float = 20) -> None:
    """Wait until the sentinel has read the primary's INFO over TLS (it names it a
    primary, not down)."""
    deadline = time.monotonic() + timeout
    with redis.Redis(port=sentinel.port, decode_responses=True) as client:
        while True:
            state = client.sentinel_master(SERVICE)
            if state.get("role-reported") == "master" and not (
                state["is_sdown"] or state["is_odown"]
            ):
                if int(state.get("info-refresh", 10**9)) < 5000:
                    return
            if time.monotonic() > deadline:
                raise AssertionError(f"the sentinel never watched the TLS primary: {state}")
            time.sleep(0.05)


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Secured]:
    certs = make_certificates(tmp_path)
    data_port, sentinel_port = free_port(), free_port()
    with RedisServer(*_tls_args(certs, data_port)):
        sentinel = SentinelServer(SERVICE, data_port, quorum=1)
        lines = " ".join(_tls_args(certs, sentinel_port)).replace(" --", "\n--").split("\n")
        conf = [line.removeprefix("--") for line in lines]
        # The sentinel speaks TLS to the primary too, with its certificate.
        conf.append("tls-replication yes")
        with sentinel.conf.open("a") as out:
            out.write("\n".join(conf) + "\n")
        with sentinel:
            _watching(sentinel)
            with redis.Redis(port=sentinel.port) as admin:
                admin.execute_command(
                    "ACL", "SETUSER", "watcher", "on", ">w-pw", "~*", "&*", "+@all"
                )
                admin.execute_command("ACL", "SETUSER", "default", "on", ">admin-pw")
            yield Secured(sentinel_port, certs)


def _url(secured: Secured, sentinel: str, data: str = "") -> str:
    certs = secured.certs
    data = data or f"ssl_ca_certs={certs.ca}&ssl_certfile={certs.cert}&ssl_keyfile={certs.key}"
    host = f"127.0.0.1:{secured.sentinel_tls_port}"
    return f"rediss+sentinel://{host}/{SERVICE}/0?{data}&{sentinel}"


def _sentinel_options(secured: Secured, *, user: str = "watcher", password: str = "w-pw") -> str:
    certs = secured.certs
    found = f"sentinel_ssl=true&sentinel_ssl_ca_certs={certs.ca}"
    found += f"&sentinel_ssl_certfile={certs.cert}&sentinel_ssl_keyfile={certs.key}"
    if user:
        found += f"&sentinel_username={user}"
    if password:
        found += f"&sentinel_password={password}"
    return found


async def _works(url: str, namespace: str) -> None:
    app = duetime.App(url, namespace=namespace)
    ran: list[str] = []

    @app.task("mail")
    async def mail(payload: dict[str, str]) -> None:
        ran.append(payload["to"])

    async with app:
        await app.schedule("mail", "a", payload={"to": "x"})
        await app.pause("mail")
        assert await app.paused() == {"mail"}  # the gates' index, on duetime's client
        await app.resume("mail")
        await app.serve(burst=True)
        assert [run.task_id for run in await app.history("mail")] == ["a"]
    assert ran == ["x"]


async def test_a_worker_runs_through_tls_sentinels_with_an_acl_user(
    secured: Secured, namespace: str
) -> None:
    await _works(_url(secured, _sentinel_options(secured)), namespace)


async def test_the_sentinels_verification_can_be_turned_off(
    secured: Secured, namespace: str
) -> None:
    certs = secured.certs
    unchecked = "sentinel_ssl=true&sentinel_ssl_cert_reqs=none"
    unchecked += f"&sentinel_ssl_certfile={certs.cert}&sentinel_ssl_keyfile={certs.key}"
    unchecked += "&sentinel_username=watcher&sentinel_password=w-pw"
    await _works(_url(secured, unchecked), namespace)


#: What each refusal says.
REFUSED = {
    "no sentinel user": "NOAUTH",
    "the default user": "WRONGPASS",
    "no client certificate": "no primary found",
    "no CA": "CERTIFICATE_VERIFY_FAILED",
    "plain": "no primary found",
}


@pytest.mark.parametrize("wrong", list(REFUSED))
async def test_what_the_sentinels_or_the_primary_refuse_is_no_primary(
    secured: Secured, namespace: str, wrong: str
) -> None:
    certs = secured.certs
    url = _url(secured, _sentinel_options(secured))
    if wrong == "no sentinel user":
        url = _url(secured, _sentinel_options(secured, user="", password=""))
    elif wrong == "the default user":  # the password alone is AUTH of the default user
        url = _url(secured, _sentinel_options(secured, user=""))
    elif wrong == "no client certificate":
        url = _url(secured, f"sentinel_ssl=true&sentinel_ssl_ca_certs={certs.ca}")
    elif wrong == "no CA":
        data = f"ssl_certfile={certs.cert}&ssl_keyfile={certs.key}"  # the system's CAs
        url = _url(secured, _sentinel_options(secured), data=data)
    elif wrong == "plain":  # no sentinel_ssl: plain text to a TLS port
        url = _url(secured, "sentinel_username=watcher&sentinel_password=w-pw")
    app = duetime.App(url, namespace=namespace)
    with pytest.raises(duetime.StoreUnavailable, match=REFUSED[wrong]):
        await app.open()
    await app.close()
