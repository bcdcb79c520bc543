"""Writing and reading the kubeconfig files of the test bed."""

from __future__ import annotations

from pathlib import Path

import yaml

from nvcre.errors import UserError

CONTEXT = "nvcre-testbed"


def write_kubeconfig(path: Path, *, server: str, ca_cert: Path, user: str, cert: Path, key: Path) -> None:
    """A one-context kubeconfig that authenticates with a client certificate."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server, "certificate-authority": str(ca_cert)}}],
        "users": [{"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": user}}],
        "current-context": CONTEXT,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)


def kubeconfig_server(path: Path) -> str:
    """The server URL of the current context of a kubeconfig file."""
    try:
        config = yaml.safe_load(path.read_text()) or {}
        contexts = {c["name"]: c["context"] for c in config.get("contexts", [])}
        clusters = {c["name"]: c["cluster"] for c in config.get("clusters", [])}
        return clusters[contexts[config["current-context"]]["cluster"]]["server"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: cannot read the current context's server ({exc})") from None
