"""The control plane's parts that need no cluster: certificates, binary lookup, and
stopping process groups without leaving anything behind."""

from __future__ import annotations

import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cryptography import x509

from nvcre.testbed import binaries
from nvcre.testbed.certs import create_pki
from nvcre.errors import UserError
from nvcre.testbed.controlplane import ControlPlane, ControlPlaneError, load_running, stop_running
from nvcre.testbed.kubeconfig import kubeconfig_server
from nvcre.testbed.processes import process_start_time, spawn, stop_all


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_pki_chains_to_the_ca_with_the_right_identities(tmp_path):
    pki = create_pki(tmp_path)
    ca = _cert(pki.ca.cert)
    for pair in (pki.apiserver, pki.admin, pki.scheduler, pki.controller_manager,
                 pki.apiserver_kubelet_client, pki.kubelet_serving):
        _cert(pair.cert).verify_directly_issued_by(ca)
        # The key matches the certificate: ssl refuses a mismatched pair.
        ssl.create_default_context().load_cert_chain(str(pair.cert), str(pair.key))

    admin = _cert(pki.admin.cert).subject.rfc4514_string()
    assert "O=system:masters" in admin and "CN=kubernetes-admin" in admin
    sans = _cert(pki.apiserver.cert).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in {str(ip) for ip in sans.get_values_for_type(x509.IPAddress)}
    assert "kubernetes.default.svc" in sans.get_values_for_type(x509.DNSName)
    kubelet_sans = _cert(pki.kubelet_serving.cert).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    ).value
    assert "127.0.0.1" in {str(ip) for ip in kubelet_sans.get_values_for_type(x509.IPAddress)}
    assert oct(pki.ca.key.stat().st_mode & 0o777) == "0o600"


def test_explicit_binary_dir_missing_a_binary_is_an_error_naming_the_variable(tmp_path, monkeypatch):
    (tmp_path / "kubectl").write_text("#!/bin/sh\n")
    (tmp_path / "kubectl").chmod(0o755)
    monkeypatch.setenv("NVCRE_KUBE_BIN", str(tmp_path))
    with pytest.raises(binaries.BinariesMissing, match=r"NVCRE_KUBE_BIN=.*lacks etcd, kube-apiserver"):
        binaries.find_binaries()


def test_explicit_binary_dir_is_used_when_complete(tmp_path, monkeypatch):
    for name in binaries.REQUIRED:
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.delenv("NVCRE_KUBE_BIN", raising=False)
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    assert binaries.ensure_binaries() == tmp_path


def test_missing_cache_says_how_to_build(tmp_path, monkeypatch):
    for var in binaries.ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NVCRE_CACHE_DIR", str(tmp_path))
    with pytest.raises(binaries.BinariesMissing, match=r"make kube.*NVCRE_KUBE_BIN"):
        binaries.ensure_binaries()
    versions = binaries.pinned_versions()
    assert binaries.cached_bin_dir() == tmp_path / versions.set_name / "bin"
    assert versions.kubernetes.startswith("v1.")


def test_stop_all_kills_the_whole_process_group(tmp_path):
    # A parent that forks a grandchild: stopping the parent's group must stop both.
    script = "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"
    proc, record = spawn("parent", [sys.executable, "-c", script], tmp_path / "p.log", detach=False)
    time.sleep(0.5)
    children = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 2, children
    stop_all([record], {proc.pid: proc}, grace_s=5)
    assert proc.returncode is not None
    time.sleep(0.2)
    # A dead grandchild may stay a zombie until init reaps it; nothing may still run.
    ps = subprocess.run(["ps", "-o", "stat=,pid=", "-g", str(proc.pid)], capture_output=True, text=True)
    running = [line for line in ps.stdout.splitlines() if not line.strip().startswith("Z")]
    assert running == []
    assert not record.alive()


def test_record_does_not_match_a_recycled_pid(tmp_path):
    proc, record = spawn("sleeper", ["sleep", "30"], tmp_path / "s.log", detach=False)
    try:
        assert record.alive()
        assert record.start_time == process_start_time(proc.pid)
        impostor = type(record)(name="x", pid=record.pid, start_time=record.start_time + 1, log="")
        assert not impostor.alive()
    finally:
        stop_all([record], {proc.pid: proc})


def test_no_state_means_nothing_running(tmp_path):
    assert load_running(tmp_path) is None
    assert stop_running(tmp_path) is False
    (tmp_path / "state.json").write_text("{not json")
    with pytest.raises(ControlPlaneError, match="not valid JSON"):
        ControlPlane.attach(tmp_path)


def test_kubeconfig_server_reads_the_current_context(tmp_path):
    path = tmp_path / "kc"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: b\n"
        "clusters: [{name: ca, cluster: {server: 'https://a'}}, {name: cb, cluster: {server: 'https://b:6443'}}]\n"
        "contexts: [{name: a, context: {cluster: ca}}, {name: b, context: {cluster: cb}}]\n"
    )
    assert kubeconfig_server(path) == "https://b:6443"
    path.write_text("kind: Config\n")
    with pytest.raises(UserError, match="current context"):
        kubeconfig_server(path)


def test_a_component_that_dies_fails_start_with_its_log_and_keeps_it(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in binaries.REQUIRED:
        script = bin_dir / name
        script.write_text("#!/bin/sh\necho 'boom: cannot open data dir' >&2\nexit 3\n")
        script.chmod(0o755)
    plane = ControlPlane(tmp_path / "wd", bin_dir=bin_dir)
    with pytest.raises(ControlPlaneError, match=r"(?s)etcd exited with code 3.*boom: cannot open data dir"):
        plane.start(timeout_s=20)
    assert not plane.running()
    assert "boom" in (tmp_path / "wd" / "logs" / "etcd.log").read_text()
    assert not (tmp_path / "wd" / "state.json").exists()


def test_missing_binaries_leave_no_temporary_workdir(tmp_path, monkeypatch):
    for var in binaries.ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NVCRE_CACHE_DIR", str(tmp_path / "empty-cache"))
    plane = ControlPlane()
    assert plane.workdir.is_dir()
    with pytest.raises(binaries.BinariesMissing):
        plane.start()
    assert not plane.workdir.exists()
