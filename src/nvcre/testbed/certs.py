"""Certificates and keys for the local control plane.

Everything is issued by one throw-away CA per control plane, so every TLS hop
(kubectl -> API server, API server -> fake kubelet, controllers -> API server) is
verified for real. ECDSA P-256 keys keep generation to milliseconds, which matters
for a warm start under 30 s.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Addresses the API server's serving certificate is valid for. The first service
#: IP of the service CIDR is where in-cluster clients would reach "kubernetes".
SERVICE_CIDR = "10.0.0.0/24"
APISERVER_SERVICE_IP = "10.0.0.1"
APISERVER_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
LOOPBACK_IPS = ("127.0.0.1", "::1")

_VALIDITY = _dt.timedelta(days=365)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(cert: x509.Certificate, path: Path) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, *, ca: bool) -> x509.CertificateBuilder:
    """What a CA and a leaf certificate share: a fresh serial, the validity window (five
    minutes back, for clock skew), basic constraints and key usage; only a CA may sign."""
    now = _dt.datetime.now(_dt.timezone.utc)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )


@dataclass(frozen=True)
class CertPair:
    """A PEM certificate and its private key on disk."""

    cert: Path
    key: Path


class CertificateAuthority:
    """A CA whose key is on disk, able to issue serving and client certificates."""

    def __init__(self, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey, pair: CertPair):
        self._cert = cert
        self._key = key
        self.pair = pair

    @classmethod
    def create(cls, directory: Path, common_name: str = "nvcre-testbed-ca") -> CertificateAuthority:
        """Make a new self-signed CA and write ca.crt / ca.key into ``directory``."""
        directory.mkdir(parents=True, exist_ok=True)
        key = _new_key()
        subject = _name(common_name)
        cert = (
            _builder(subject, subject, key.public_key(), ca=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(cert, key, _save(cert, key, directory, "ca"))

    @classmethod
    def load(cls, pair: CertPair) -> CertificateAuthority:
        """Load a CA written earlier by :meth:`create` (to issue more certificates)."""
        cert = x509.load_pem_x509_certificate(pair.cert.read_bytes())
        key = serialization.load_pem_private_key(pair.key.read_bytes(), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{pair.key}: expected an EC private key")
        return cls(cert, key, pair)

    def issue(
        self,
        directory: Path,
        basename: str,
        *,
        common_name: str,
        organizations: tuple[str, ...] = (),
        server: bool = False,
        client: bool = False,
        hosts: tuple[str, ...] = (),
    ) -> CertPair:
        """Issue a leaf certificate; ``hosts`` are IPs or DNS names for a server cert."""
        if not (server or client):
            raise ValueError("a certificate must be for a server, a client or both")
        directory.mkdir(parents=True, exist_ok=True)
        key = _new_key()
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            _builder(_name(common_name, organizations), self._cert.subject, key.public_key(), ca=False)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
        )
        if hosts:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False
            )
        cert = builder.sign(self._key, hashes.SHA256())
        return _save(cert, key, directory, basename)


def _save(cert: x509.Certificate, key: ec.EllipticCurvePrivateKey, directory: Path, basename: str) -> CertPair:
    """Write ``<basename>.crt`` and ``<basename>.key`` (the key readable by the owner only)."""
    pair = CertPair(directory / f"{basename}.crt", directory / f"{basename}.key")
    _write_cert(cert, pair.cert)
    _write_key(key, pair.key)
    return pair

def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def write_service_account_keys(directory: Path) -> CertPair:
    """Key pair the API server signs service-account tokens with (``cert`` is the public key)."""
    directory.mkdir(parents=True, exist_ok=True)
    key = _new_key()
    pair = CertPair(directory / "sa.pub", directory / "sa.key")
    _write_key(key, pair.key)
    pair.cert.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pair


@dataclass(frozen=True)
class ControlPlanePKI:
    """Every certificate and key one local control plane uses, by role."""

    ca: CertPair
    apiserver: CertPair  # serving cert for 127.0.0.1 / localhost / kubernetes.default...
    admin: CertPair  # client: kubernetes-admin in system:masters
    scheduler: CertPair  # client: system:kube-scheduler
    controller_manager: CertPair  # client: system:kube-controller-manager
    apiserver_kubelet_client: CertPair  # client the API server shows to kubelets
    kubelet_serving: CertPair  # serving cert for 127.0.0.1 / localhost, for a fake kubelet
    service_account: CertPair  # sa.pub / sa.key


def create_pki(directory: Path) -> ControlPlanePKI:
    """Generate a fresh CA and every certificate the control plane needs."""
    ca = CertificateAuthority.create(directory)
    loopback = (*LOOPBACK_IPS, "localhost")
    return ControlPlanePKI(
        ca=ca.pair,
        apiserver=ca.issue(
            directory,
            "apiserver",
            common_name="kube-apiserver",
            server=True,
            hosts=(*LOOPBACK_IPS, APISERVER_SERVICE_IP, *APISERVER_DNS_NAMES),
        ),
        admin=ca.issue(
            directory,
            "admin",
            common_name="kubernetes-admin",
            organizations=("system:masters",),
            client=True,
        ),
        scheduler=ca.issue(
            directory, "kube-scheduler", common_name="system:kube-scheduler", client=True
        ),
        controller_manager=ca.issue(
            directory,
            "kube-controller-manager",
            common_name="system:kube-controller-manager",
            client=True,
        ),
        apiserver_kubelet_client=ca.issue(
            directory,
            "apiserver-kubelet-client",
            common_name="kube-apiserver-kubelet-client",
            organizations=("system:masters",),
            client=True,
        ),
        kubelet_serving=ca.issue(
            directory, "kubelet-serving", common_name="nvcre-fake-kubelet", server=True, hosts=loopback
        ),
        service_account=write_service_account_keys(directory),
    )
