"""The local control plane is a real cluster: it serves, enforces RBAC, runs the job and
garbage-collector controllers, and stops leaving nothing behind."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from kubernetes import client

from nvcre.testbed import ControlPlane, ControlPlaneError, load_running, stop_running
from nvcre.testbed.processes import process_start_time
from nvcre.testbed.waiting import wait_until

WARM_START_BUDGET_S = 30.0


def test_kubectl_lists_the_system_namespaces(kubectl):
    names = kubectl("get", "namespaces", "-o", "name").stdout.split()
    assert {"namespace/default", "namespace/kube-system", "namespace/kube-public"} <= set(names)


def test_rbac_refuses_a_service_account_without_bindings(kubectl, namespace):
    kubectl("create", "serviceaccount", "nobody", "-n", namespace)
    who = f"system:serviceaccount:{namespace}:nobody"

    refused = kubectl("auth", "can-i", "list", "nodes", f"--as={who}", check=False)
    assert refused.returncode == 1 and refused.stdout.strip() == "no", refused

    # The same question is answered yes once RBAC grants it: the authorizer decides.
    role = f"{namespace}-node-reader"
    kubectl("create", "clusterrole", role, "--verb=list", "--resource=nodes")
    try:
        kubectl("create", "clusterrolebinding", role, f"--clusterrole={role}", f"--serviceaccount={namespace}:nobody")
        allowed = wait_until(
            lambda: kubectl("auth", "can-i", "list", "nodes", f"--as={who}", check=False).returncode == 0,
            timeout_s=10,
            what="the new binding to take effect",
        )
        assert allowed
    finally:
        kubectl("delete", "clusterrolebinding", role, "--ignore-not-found")
        kubectl("delete", "clusterrole", role, "--ignore-not-found")


def _job(name: str) -> client.V1Job:
    return client.V1Job(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1JobSpec(
            backoff_limit=0,
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(
                    restart_policy="Never",
                    containers=[client.V1Container(name="main", image="busybox", command=["true"])],
                )
            ),
        ),
    )


def _job_pods(core: client.CoreV1Api, namespace: str, job: str) -> list[client.V1Pod]:
    return core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items


def test_job_controller_creates_the_pod_and_gc_deletes_it(api_client, namespace):
    batch = client.BatchV1Api(api_client)
    core = client.CoreV1Api(api_client)
    created = batch.create_namespaced_job(namespace, _job("hello"))

    pods = wait_until(lambda: _job_pods(core, namespace, "hello"), what="the job controller to create a pod")
    assert len(pods) == 1
    owner = pods[0].metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid) == ("Job", "hello", created.metadata.uid)
    assert pods[0].status.phase == "Pending"  # no nodes: nothing runs it

    # Orphan-free deletion is the garbage collector's work, not the API server's.
    batch.delete_namespaced_job("hello", namespace, propagation_policy="Background")
    wait_until(
        lambda: not _job_pods(core, namespace, "hello"),
        timeout_s=60,
        what="the garbage collector to delete the deleted Job's pod",
    )


def _nobody_listens(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_detached_control_plane_is_found_and_stopped_by_another_handle(tmp_path):
    """Warm start within budget; state.json lets another process find and stop it."""
    workdir = tmp_path / "testbed"
    plane = ControlPlane(workdir, detach=True)
    try:
        plane.start()
        assert plane.start_seconds is not None
        print(f"warm start: {plane.start_seconds:.1f}s")
        assert plane.start_seconds < WARM_START_BUDGET_S

        found = load_running(workdir)
        assert found is not None and found.server == plane.server
        assert found.process_status() == {
            "etcd": True,
            "kube-apiserver": True,
            "kube-scheduler": True,
            "kube-controller-manager": True,
        }
        with pytest.raises(ControlPlaneError, match="already running"):
            ControlPlane(workdir).start()
        pids = [r.pid for r in plane.records]
        ports = dict(plane.ports)

        assert stop_running(workdir) is True
        assert load_running(workdir) is None
        assert stop_running(workdir) is False
        for pid in pids:
            # Reaped by the kernel or a zombie of this process: neither is running.
            wait_until(
                lambda pid=pid: process_start_time(pid) is None or _zombie(pid),
                timeout_s=5,
                what=f"pid {pid} to be gone",
            )
        # A killed process's sockets close once its last thread is gone: allow a moment.
        wait_until(
            lambda: not [name for name, port in ports.items() if not _nobody_listens(port)],
            timeout_s=5,
            what="every component's port to close",
        )
    finally:
        plane.stop()


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_hard_killed_owner_takes_its_control_plane_with_it(tmp_path):
    """A test run killed with SIGKILL (no teardown, no atexit) leaves nothing running."""
    workdir = tmp_path / "owned"
    script = (
        "import sys, time\n"
        "from nvcre.testbed import ControlPlane\n"
        f"plane = ControlPlane({str(workdir)!r}).start()\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "ready"
        plane = ControlPlane.attach(workdir)
        assert plane.running()
        owner.kill()
        owner.wait()
        wait_until(lambda: not any(plane.process_status().values()), timeout_s=20,
                   what="every component to die with its owner")
    finally:
        if owner.poll() is None:
            owner.kill()
        stop_running(workdir)


def test_a_port_taken_between_pick_and_bind_is_retried(tmp_path, monkeypatch):
    """Parallel test runs race for ports; losing the race costs a retry, not a failure."""
    import nvcre.testbed.controlplane as cp_module

    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    real_free_port = cp_module.free_port
    handed_out = []

    def racy_free_port() -> int:
        # The first port handed out (etcd's client port) is already someone else's.
        port = taken if not handed_out else real_free_port()
        handed_out.append(port)
        return port

    monkeypatch.setattr(cp_module, "free_port", racy_free_port)
    plane = ControlPlane(tmp_path / "race")
    try:
        plane.start()
        assert plane.running()
        assert plane.ports["etcd"] != taken
        assert handed_out.count(taken) == 1
    finally:
        plane.stop()
        squatter.close()


def test_fresh_control_plane_is_a_separate_cluster(fresh_control_plane, control_plane, kubectl):
    assert fresh_control_plane.server != control_plane.server
    kubectl("create", "clusterrole", "only-in-the-session-cluster", "--verb=get", "--resource=pods")
    try:
        other = subprocess.run(
            [str(fresh_control_plane.kubectl_path), "--kubeconfig", str(fresh_control_plane.kubeconfig),
             "get", "clusterrole", "only-in-the-session-cluster"],
            capture_output=True, text=True,
        )
        assert other.returncode == 1 and "NotFound" in other.stderr, other
    finally:
        kubectl("delete", "clusterrole", "only-in-the-session-cluster")
