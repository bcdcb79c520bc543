"""`nvcrectl rbac print --namespace NS`: the RoleBinding that lets the controller run there.

Under the chart's ``rbac.scope: namespaced`` the controller writes workloads only in
namespaces bound to its run role. ``certification run`` creates this binding in the
namespace it makes; for runs applied with kubectl or GitOps, print it and apply it.
"""

from __future__ import annotations

import re

import typer

from nvcre.cli.apps import rbac_app
from nvcre.errors import UserError

DEFAULT_RELEASE = "nvcre"
DEFAULT_CONTROLLER_NAMESPACE = "nvcre"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def release_fullname(release: str) -> str:
    """The chart's fullname rule: the release name when it contains the chart name."""
    return release if "nvcre" in release else f"{release}-nvcre"


def run_access_binding(namespace: str, release: str = DEFAULT_RELEASE, controller_namespace: str = DEFAULT_CONTROLLER_NAMESPACE) -> dict:
    """RoleBinding <fullname>-manager-run in ``namespace`` to ClusterRole <fullname>-run-role."""
    for flag, value in (("--namespace", namespace), ("--controller-namespace", controller_namespace)):
        if not _DNS_LABEL.match(value or ""):
            raise UserError(f"{flag}: {value!r} is not a valid namespace name (lower-case letters, digits and '-', at most 63)")
    full = release_fullname(release)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": f"{full}-manager-run",
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "nvcrectl", "app.kubernetes.io/instance": release},
        },
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{full}-run-role"},
        "subjects": [{"kind": "ServiceAccount", "name": full, "namespace": controller_namespace}],
    }


@rbac_app.command("print")
def print_binding(
    namespace: str = typer.Option(..., "--namespace", "-n", help="The run namespace to grant the controller."),
    release: str = typer.Option(DEFAULT_RELEASE, "--release", help="Helm release name of nvcre."),
    controller_namespace: str = typer.Option(DEFAULT_CONTROLLER_NAMESPACE, "--controller-namespace", help="Namespace nvcre is installed in."),
) -> None:
    """Print the RoleBinding that lets the controller create workloads in NAMESPACE (pipe it to kubectl apply -f -)."""
    import yaml

    typer.echo(yaml.safe_dump(run_access_binding(namespace, release, controller_namespace), sort_keys=False), nl=False)
