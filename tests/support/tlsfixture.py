"""Test-time TLS: a throw-away CA and server certificates (openssl CLI), and nginx serving HTTPS + h2.

    pki = make_pki(tmp_path)                       # skips the test when openssl is missing
    good = pki.server_cert("good", names=("harvestman.test",), ips=("127.1.6.1",))
    old = pki.server_cert("old", names=("old.test",), ips=("127.1.6.3",), expired=True)
    with TlsNginx(tmp_path / "www", {"127.1.6.1": good, "127.1.6.3": old}) as srv:
        srv.url("127.1.6.1", "/")                  # https://127.1.6.1:PORT/

Every certificate is made in `tmp_path` for the test at hand; nothing is installed system-wide.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.nginx import NginxServer

OPENSSL_TIMEOUT = 30.0


def require_openssl() -> str:
    """The openssl binary's path; skips the calling test when it is not installed."""
    binary = shutil.which("openssl")
    if binary is None:
        pytest.skip("the openssl CLI is not installed (apt-get install openssl): no test certificates")
    return binary


@dataclass(frozen=True, slots=True)
class CertPair:
    """A PEM certificate (leaf, as served) and its private key."""

    cert: Path
    key: Path


_CA_CONF = """[ca]
default_ca = test_ca
[test_ca]
dir = {dir}
database = {dir}/index.txt
new_certs_dir = {dir}/issued
serial = {dir}/serial
default_md = sha256
policy = any_policy
unique_subject = no
copy_extensions = none
[any_policy]
commonName = supplied
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = {san}
"""


class Pki:
    """A self-signed test CA in `directory` that issues server certificates (valid or expired)."""

    def __init__(self, directory: Path) -> None:
        self.openssl = require_openssl()
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "issued").mkdir(exist_ok=True)
        (self.dir / "index.txt").write_text("")
        (self.dir / "serial").write_text("1000\n")
        self.ca = CertPair(self.dir / "ca.crt", self.dir / "ca.key")
        self._run(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
            "-keyout", str(self.ca.key), "-out", str(self.ca.cert),
            "-subj", "/CN=harvestman test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        )

    def _run(self, *args: str) -> None:
        done = subprocess.run([self.openssl, *args], capture_output=True, text=True,
                              timeout=OPENSSL_TIMEOUT, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()[-1500:]}")

    def server_cert(self, name: str, *, names: tuple[str, ...], ips: tuple[str, ...] = (),
                    expired: bool = False) -> CertPair:
        """A server certificate for DNS `names` and IP `ips`, signed by this CA (expired in 2020 if asked)."""
        pair = CertPair(self.dir / f"{name}.crt", self.dir / f"{name}.key")
        csr = self.dir / f"{name}.csr"
        self._run("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(pair.key),
                  "-out", str(csr), "-subj", f"/CN={names[0] if names else ips[0]}")
        san = ", ".join([f"DNS:{n}" for n in names] + [f"IP:{ip}" for ip in ips])
        conf = self.dir / f"{name}.cnf"
        conf.write_text(_CA_CONF.format(dir=self.dir, san=san), encoding="utf-8")
        if expired:
            validity = ["-startdate", "20200101000000Z", "-enddate", "20200102000000Z"]
        else:
            validity = ["-days", "2"]
        self._run("ca", "-batch", "-notext", "-config", str(conf), "-extensions", "server_ext",
                  "-cert", str(self.ca.cert), "-keyfile", str(self.ca.key),
                  "-in", str(csr), "-out", str(pair.cert), *validity)
        return pair


def make_pki(directory: Path) -> Pki:
    """A fresh test CA under `directory` (skips the test without openssl)."""
    return Pki(directory)


class TlsNginx(NginxServer):
    """nginx serving HTTPS (HTTP/2 offered through ALPN) on each address with its own certificate."""

    def __init__(self, root: Path, certs: dict[str, CertPair], port: int | None = None) -> None:
        super().__init__(root, list(certs), port)
        self.certs = dict(certs)

    def url(self, host_ip: str, path: str = "/") -> str:
        """The https URL of `path` on the server block of `host_ip`."""
        return "https://" + super().url(host_ip, path).removeprefix("http://")

    def config_text(self, workdir: Path) -> str:
        """nginx.conf with one `listen ... ssl http2` server block per address."""
        plain = super().config_text(workdir)
        head, _, _servers = plain.partition("    server {")
        servers = "\n".join(
            f"""    server {{
        listen {host}:{self.port} ssl http2;
        server_name _;
        ssl_certificate {pair.cert};
        ssl_certificate_key {pair.key};
        ssl_protocols TLSv1.2 TLSv1.3;
        root {self.root / host};
    }}"""
            for host, pair in self.certs.items()
        )
        return f"{head}{servers}\n}}\n"
