"""Command lines of the four control-plane components (pure: paths and ports in, argv out).

Kept apart from the process handling so the flags that make this a real cluster
(RBAC, service-account signing, kubelet TLS, every default controller) are read in
one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nvcre.testbed.certs import SERVICE_CIDR, ControlPlanePKI

#: Client rate limits for scheduler and controller-manager: the defaults (20 qps)
#: would make a simulated 512-node fleet wait on the client, not on the cluster.
CLIENT_QPS = 200
CLIENT_BURST = 400
PORT_NAMES = ("etcd", "etcd_peer", "apiserver", "scheduler", "controller_manager")


@dataclass(frozen=True)
class Layout:
    """Where one control plane's binaries, files and ports are."""

    bin_dir: Path
    workdir: Path
    ports: dict[str, int]

    def binary(self, name: str) -> str:
        return str(self.bin_dir / name)


def etcd_argv(at: Layout) -> list[str]:
    client = f"http://127.0.0.1:{at.ports['etcd']}"
    peer = f"http://127.0.0.1:{at.ports['etcd_peer']}"
    return [
        at.binary("etcd"),
        "--name=nvcre",
        f"--data-dir={at.workdir / 'etcd'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=nvcre={peer}",
        # A test bed loses nothing it needs on a crash; fsync would only slow it.
        "--unsafe-no-fsync=true",
        "--log-level=warn",
    ]


def apiserver_argv(at: Layout, pki: ControlPlanePKI) -> list[str]:
    return [
        at.binary("kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{at.ports['etcd']}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={at.ports['apiserver']}",
        f"--cert-dir={at.workdir / 'apiserver'}",
        f"--tls-cert-file={pki.apiserver.cert}",
        f"--tls-private-key-file={pki.apiserver.key}",
        f"--client-ca-file={pki.ca.cert}",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki.service_account.cert}",
        f"--service-account-signing-key-file={pki.service_account.key}",
        # kubectl logs/exec: reach a (fake) kubelet by InternalIP over verified TLS.
        f"--kubelet-client-certificate={pki.apiserver_kubelet_client.cert}",
        f"--kubelet-client-key={pki.apiserver_kubelet_client.key}",
        f"--kubelet-certificate-authority={pki.ca.cert}",
        "--kubelet-preferred-address-types=InternalIP",
        "--allow-privileged=true",
        # A loopback address may not be an Endpoints address; nothing in the
        # test bed reaches the API server through the kubernetes Service.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
        "--v=1",
    ]


def scheduler_config(kubeconfig: Path) -> dict:
    """KubeSchedulerConfiguration: client rate limits are not flags any more."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": CLIENT_QPS, "burst": CLIENT_BURST},
        "leaderElection": {"leaderElect": False},
    }


def scheduler_argv(at: Layout, config: Path, kubeconfig: Path) -> list[str]:
    return [
        at.binary("kube-scheduler"),
        f"--config={config}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={at.ports['scheduler']}",
        f"--cert-dir={at.workdir / 'scheduler'}",
        "--v=1",
    ]


def controller_manager_argv(at: Layout, kubeconfig: Path, pki: ControlPlanePKI, *,
                            node_monitor_grace_s: int | None = None) -> list[str]:
    grace = [f"--node-monitor-grace-period={int(node_monitor_grace_s)}s"] if node_monitor_grace_s else []
    return [
        at.binary("kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={at.ports['controller_manager']}",
        f"--cert-dir={at.workdir / 'controller-manager'}",
        "--leader-elect=false",
        "--controllers=*",
        # Each controller runs under its own service account and bootstrap RBAC role.
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki.service_account.key}",
        f"--root-ca-file={pki.ca.cert}",
        f"--cluster-signing-cert-file={pki.ca.cert}",
        f"--cluster-signing-key-file={pki.ca.key}",
        f"--kube-api-qps={CLIENT_QPS}",
        f"--kube-api-burst={CLIENT_BURST}",
        *grace,
        "--v=1",
    ]
