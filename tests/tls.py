"""Certificates for the tests' TLS servers, made with the openssl command: a CA, and a
server certificate it signs for 127.0.0.1 and localhost."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple


class Certificates(NamedTuple):
    ca: Path
    cert: Path
    key: Path


def make_certificates(folder: Path) -> Certificates:
    """A CA and a server certificate signed by it, valid for a day, in ``folder``."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError(
            "openssl is not on the PATH: the TLS tests make their certificates with it "
            "(Debian/Ubuntu: apt-get install -y openssl)"
        )
    ca, ca_key = folder / "ca.pem", folder / "ca.key"
    cert, key, csr = folder / "server.pem", folder / "server.key", folder / "server.csr"
    ext = folder / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, timeout=60)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca",
        "-keyout", str(ca_key), "-out", str(ca))  # fmt: skip
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
        "-keyout", str(key), "-out", str(csr))  # fmt: skip
    run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-days", "1", "-extfile", str(ext), "-out", str(cert))  # fmt: skip
    return Certificates(ca, cert, key)
