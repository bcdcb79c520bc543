"""A new user's session, end to end: `nvcrectl certification run --wait`, the report in
every format, the HTML in headless Chromium, the first-day missing -n, the MCP server
over stdio, and cleanup. Every command runs as a subprocess against the test bed
(real control plane, simulated fleet reproducing the seeds' failure sample, controller).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import anyio
import pytest
import yaml

from nvcre.kube.resources import NVCRE_API_VERSION

NVCRECTL = str(Path(sys.executable).with_name("nvcrectl"))
SCREENSHOT_DIR = Path(os.environ.get("NVCRE_ARTIFACTS", Path(__file__).resolve().parents[2] / "out"))

CERT = {
    "apiVersion": NVCRE_API_VERSION,
    "kind": "Certification",
    "metadata": {"name": "gpu-cluster-cert"},
    "spec": {
        "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
        "env": [{"name": "NCCL_DEBUG_SUBSYS", "value": "INIT,NET-secret-ish"}],
        "categories": [
            {
                "domain": "communication",
                "variant": "nccl-all-reduce",
                "options": {"nodesPerJob": 8, "thresholds": {"busBandwidthGBps": "value >= 300"}},
            },
            {"domain": "training", "variant": "nemotron5-8b"},
        ],
    },
}


def nvcrectl(kubeconfig: str, *args: str, timeout: float = 600, stdin: str | None = None,
             env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # a pipe's width unless asked
    env = {**base, "KUBECONFIG": kubeconfig, **(env or {})}
    return subprocess.run([NVCRECTL, *args], capture_output=True, text=True, env=env, timeout=timeout, input=stdin)


def test_run_wait_report_html_mcp_cleanup(sim_fleet, controller, kube, kubeconfig, tmp_path, kubectl):
    sim_fleet.start("seed-failure-sample.yaml")
    controller.start()
    cert_file = tmp_path / "certification.yaml"
    cert_file.write_text(yaml.safe_dump(CERT))
    results, junit, html = tmp_path / "results.json", tmp_path / "junit.xml", tmp_path / "report.html"

    run = nvcrectl(
        kubeconfig, "certification", "run", "--cert-file", str(cert_file), "--wait", "--timeout", "8m",
        "--results-file", str(results), "--junit-file", str(junit), "--html-file", str(html),
    )
    out = run.stdout
    assert run.returncode == 1, f"a FAILED certification exits 1\n{out}\n{run.stderr}\n{controller.log_tail()}"
    ns = re.search(r"namespace/(nvcrectl-\d{8}-\d{6}) created", run.stderr).group(1)
    assert "certification.nvcre.nvidia.com/gpu-cluster-cert created in namespace " + ns in run.stderr
    assert out.startswith("\n╔"), "stdout holds the report alone"
    # live progress went to stderr, one line per change, with phases and groups
    assert "communication/nccl-all-reduce" in run.stderr and "groups" in run.stderr
    # the report: the seeds' layout (at the pipe's 80 columns), both bad nodes named with their reasons
    assert "║                             Certification Report                             ║" in out
    node07 = out.split("✗  gpu-node-07  ThresholdViolation", 1)[1].split("✗  gpu-node-12", 1)[0]
    assert "Measured:" in node07 and " GB/s" in node07 and "Bar:       value >= 300" in node07
    assert "Next step:" in node07 and "Cordon:       kubectl cordon gpu-node-07 gpu-node-12" in out
    assert "- gpu-node-07  ThresholdViolation" in out  # Summary: every failed node with its reason
    assert "- gpu-node-12  HardwareFailureDetected" in out
    assert "✗  gpu-node-12  HardwareFailureDetected" in out  # the category card
    assert "Result:       FAILED" in out
    # training has no threshold and no stage: it ran, but nothing judged it (issue 14), so it is not
    # counted as passed beside the failed all-reduce
    assert "Categories:   0/2 passed, 1 not judged" in out
    assert "NCCL_DEBUG_SUBSYS" in out and "secret-ish" not in out  # env names, never values

    data = json.loads(results.read_text())
    assert data["schemaVersion"] == "nvcre.report/v1" and data["result"] == "FAILED"
    reasons = {(d["name"], d["reason"]) for d in data["failedNodeDetails"]}
    assert reasons == {("gpu-node-07", "ThresholdViolation"), ("gpu-node-12", "HardwareFailureDetected")}
    assert data["categories"][0]["isolation"].startswith("isolated to gpu-node-07 in ")
    assert "Isolation: isolated to gpu-node-07" in out  # the text report says how the node was singled out
    narrow = nvcrectl(kubeconfig, "certification", "report", "gpu-cluster-cert", "-n", ns, env={"COLUMNS": "66"})
    assert "║                      Certification Report                      ║" in narrow.stdout  # the reference layout
    ar = data["categories"][0]
    assert any(g.get("bandwidth") for g in ar["groups"]), "bandwidth per size per group"
    assert any(fg.get("failureLog", {}).get("podName") for fg in ar["failedGroups"]), "failure log of the dead group"
    suites = ET.parse(junit).getroot().findall("testsuite")
    assert {s.get("name") for s in suites} >= {"communication/nccl-all-reduce", "training/nemotron5-8b"}

    # the report again, as JSON and Markdown; exit code follows the result
    again = nvcrectl(kubeconfig, "certification", "report", "gpu-cluster-cert", "-n", ns, "-o", "json")
    assert again.returncode == 1
    assert json.loads(again.stdout)["failedNodes"] == data["failedNodes"]
    md = nvcrectl(kubeconfig, "certification", "report", "gpu-cluster-cert", "-n", ns, "-o", "markdown")
    assert "| `gpu-node-07` | ThresholdViolation |" in md.stdout

    # the common first-day mistake: no -n
    missing = nvcrectl(kubeconfig, "certification", "report", "gpu-cluster-cert")
    assert missing.returncode == 2
    assert "not found in namespace 'default'" in missing.stderr
    assert f"add -n {ns}" in missing.stderr and f"{ns}/gpu-cluster-cert" in missing.stderr
    assert "Traceback" not in missing.stderr

    _screenshot(html, tmp_path)
    _keep_run_objects(kubeconfig, ns)
    _mcp_answers_read_only(kubeconfig, kubectl, ns)

    # cleanup removes the certification, its children and the namespace the run made
    gone = nvcrectl(kubeconfig, "certification", "cleanup", "gpu-cluster-cert", "-n", ns, "--timeout", "2m")
    assert gone.returncode == 0, gone.stderr
    assert f"namespace/{ns} deleted" in gone.stdout
    assert kube.get(NVCRE_API_VERSION, "Certification", "gpu-cluster-cert", ns) is None


def _screenshot(html: Path, tmp_path: Path) -> None:
    """Open the HTML report in headless Chromium and keep a screenshot to look at."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed: run hack/install-chromium.sh (Debian's chromium package)", pytrace=False)
    page = html.read_text()
    assert "<svg" in page and "gpu-node-07" in page and "<script" not in page
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOT_DIR / "report-failure-sample.png"
    shot.unlink(missing_ok=True)
    result = subprocess.run(
        [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run",
            f"--user-data-dir={tmp_path / 'chromium'}", f"--screenshot={shot}", "--window-size=1400,2000",
            html.resolve().as_uri(),
        ],
        capture_output=True, text=True, timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 20_000, result.stderr[-2000:]
    shutil.copy(html, SCREENSHOT_DIR / "report-failure-sample.html")


def _mcp_answers_read_only(kubeconfig: str, kubectl, ns: str) -> None:
    """`nvcrectl mcp serve` over stdio with a real MCP client session, running as a
    ServiceAccount that may only get/list/watch: every tool answers, so none writes."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    reader_kubeconfig = _read_only_kubeconfig(kubeconfig, kubectl, ns)
    params = StdioServerParameters(command=NVCRECTL, args=["mcp", "serve", "--kubeconfig", reader_kubeconfig])

    async def session():
        async with Client(params) as client:
            tools = await client.list_tools()
            answers = {
                "list_categories": await client.call_tool("list_categories", {}),
                "get_certification_status": await client.call_tool("get_certification_status", {"name": "gpu-cluster-cert", "namespace": ns}),
                "get_certification_report": await client.call_tool("get_certification_report", {"name": "gpu-cluster-cert", "namespace": ns}),
                "list_failed_nodes": await client.call_tool("list_failed_nodes", {"name": "gpu-cluster-cert", "namespace": ns}),
                "wrong_namespace": await client.call_tool("get_certification_status", {"name": "gpu-cluster-cert"}),
            }
            return tools, answers

    tools, answers = anyio.run(session)
    assert sorted(t.name for t in tools.tools) == ["get_certification_report", "get_certification_status", "list_categories", "list_failed_nodes"]
    assert all(t.annotations.read_only_hint for t in tools.tools)
    for name, answer in answers.items():
        if name != "wrong_namespace":
            assert not answer.is_error, f"{name}: {answer.content[0].text}"
    status = json.loads(answers["get_certification_status"].content[0].text)
    assert status["result"] == "FAILED" and "gpu-node-12" in status["failedNodes"]
    failed = json.loads(answers["list_failed_nodes"].content[0].text)["failedNodes"]
    assert ("gpu-node-07", "ThresholdViolation") in {(f["name"], f["reason"]) for f in failed}
    report = json.loads(answers["get_certification_report"].content[0].text)["report"]
    cli = json.loads(nvcrectl(kubeconfig, "certification", "report", "gpu-cluster-cert", "-n", ns, "-o", "json").stdout)
    assert report["failedNodeDetails"] == cli["failedNodeDetails"] and report["result"] == cli["result"]
    categories = json.loads(answers["list_categories"].content[0].text)["categories"]
    assert any((c["domain"], c["variant"]) == ("communication", "nccl-all-reduce") for c in categories)
    assert answers["wrong_namespace"].is_error and f"add -n {ns}" in answers["wrong_namespace"].content[0].text


def _read_only_kubeconfig(admin_kubeconfig: str, kubectl, ns: str) -> str:
    """A kubeconfig for a ServiceAccount bound to get/list/watch only (no write verb anywhere)."""
    sa_ns = "nvcre-mcp-reader"
    kubectl("create", "namespace", sa_ns, check=False)
    kubectl("-n", sa_ns, "create", "serviceaccount", "reader", check=False)
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "nvcre-mcp-reader"},
        "rules": [
            {"apiGroups": ["nvcre.nvidia.com"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "nvcre-mcp-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nvcre-mcp-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": sa_ns}],
    }
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([role, binding]))
    token = kubectl("-n", sa_ns, "create", "token", "reader", "--duration=1h").stdout.strip()
    admin = yaml.safe_load(Path(admin_kubeconfig).read_text())
    cluster = admin["clusters"][0]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "reader", "user": {"token": token}}],
        "contexts": [{"name": "reader", "context": {"cluster": cluster["name"], "user": "reader"}}],
        "current-context": "reader",
    }
    path = Path(admin_kubeconfig).with_name(f"mcp-reader-{ns}.kubeconfig")
    path.write_text(yaml.safe_dump(config))
    # the reader really cannot write
    denied = kubectl("--kubeconfig", str(path), "-n", ns, "delete", "certification", "gpu-cluster-cert", "--dry-run=server", check=False)
    assert denied.returncode != 0 and "forbidden" in denied.stderr.lower()
    return str(path)


def _keep_run_objects(kubeconfig: str, ns: str) -> None:
    """Save what the API server held for this run (the report's input) beside the screenshot;
    tests/unit/report/data/ keeps a reviewed copy as a recorded fixture."""
    from nvcre.kube.client import KubeClient
    from nvcre.report.collect import collect

    objs = collect(KubeClient.from_kubeconfig(kubeconfig), "Certification", "gpu-cluster-cert", ns)
    keep = {
        "root": objs.root, "workflows": objs.workflows, "jobs": objs.jobs,
        "bandwidthMeasurements": objs.bandwidth_measurements, "goodputMeasurements": objs.goodput_measurements,
        "nodes": [{"metadata": {"name": n["metadata"]["name"], "labels": n["metadata"].get("labels", {})}} for n in objs.nodes],
    }
    (SCREENSHOT_DIR / "run-objects-failure-sample.json").write_text(json.dumps(keep, indent=1))


def test_category_run_passes_on_a_healthy_fleet(sim_fleet, controller, kubeconfig, tmp_path):
    """--category alone: the derived wait, live progress, PASSED, exit 0, HTML written."""
    sim_fleet.start("healthy.yaml", nodes=4)
    controller.start()
    html = tmp_path / "healthy.html"
    run = nvcrectl(
        kubeconfig, "certification", "run", "--category", "communication/nccl-all-reduce", "--stage", "bring-up",
        "--test-scale", "intra-node", "--wait", "--html-file", str(html),
    )
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{controller.log_tail()}"
    assert "waiting up to 1h30m for certification " in run.stderr
    assert "(1 category: (1h00m timeoutPerJob) x 1.5 for scheduling and measurement" in run.stderr  # the budget explained
    assert "Result:       PASSED" in run.stdout and "Failed Nodes: none" in run.stdout
    assert "Scale:     intra-node" in run.stdout and "Jobs:      4" in run.stdout
    assert "Succeeded" in run.stderr  # the progress lines saw it finish
    page = html.read_text()
    assert "PASSED" in page and page.count("<polyline") == 4


def test_wait_that_ends_first_prints_the_partial_report(kube, kubeconfig):
    """No controller is running: the wait ends, the report says RUNNING, exit 5, and the
    user is told how to watch, report again and stop it."""
    run = nvcrectl(kubeconfig, "certification", "run", "--category", "diagnostics/dcgm-level4", "--wait", "--timeout", "3s")
    assert run.returncode == 5, run.stderr
    ns = re.search(r"namespace/(nvcrectl-\d{8}-\d{6}) created", run.stderr).group(1)
    assert "Result:       RUNNING" in run.stdout and "Status:    Pending" in run.stdout
    assert "timed out after 3s; the run keeps going" in run.stderr
    assert f"nvcrectl certification cleanup {ns} -n {ns}" in run.stderr
    gone = nvcrectl(kubeconfig, "certification", "cleanup", ns, "-n", ns)
    assert gone.returncode == 0 and f"namespace/{ns} deleted" in gone.stdout


def test_wait_shows_blocked_lines_then_the_pass(sim_fleet, controller, kube, kubeconfig, namespace, tmp_path, e2e):
    """A GPU hog holds gpu-node-01: --wait prints a Blocked line with the scheduler's words;
    once the hog goes, the run finishes and passes."""
    import time

    sim_fleet.start("healthy.yaml", nodes=2, racks=1)
    controller.start()
    e2e.hold_gpus(kube, namespace, "gpu-node-01")
    cert = {**CERT, "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, "categories": [
        {"domain": "communication", "variant": "nccl-loopback",
         "options": {"testScale": "intra-node", "schedulingStallGraceSeconds": 2, "timeoutPerJob": "10m",
                     "thresholds": {"busBandwidthGBps": "value >= 1"}}}]}}
    cert_file = tmp_path / "blocked.yaml"
    cert_file.write_text(yaml.safe_dump(cert))
    proc = subprocess.Popen(
        [NVCRECTL, "certification", "run", "--cert-file", str(cert_file), "--wait", "--timeout", "5m"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "KUBECONFIG": kubeconfig},
    )
    seen = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if "Blocked:" in line:
            break
    blocked = [l for l in seen if "Blocked:" in l]
    assert blocked, "".join(seen) + controller.log_tail()
    assert "unschedulable" in blocked[0] and "nvidia.com/gpu" in blocked[0]
    e2e.release_gpus(kube, namespace)  # capacity comes back
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err + controller.log_tail()
    assert "Result:       PASSED" in out
    ns = re.search(r"namespace/(nvcrectl-\d{8}-\d{6}) created", "".join(seen) + err).group(1)
    nvcrectl(kubeconfig, "certification", "cleanup", "gpu-cluster-cert", "-n", ns)


def test_cleanup_runs_after_the_report_and_run_access_is_opt_in(kube, kubeconfig, kubectl):
    """--wait --cleanup: the (partial) report is printed alone on stdout, then the
    Certification and the namespace this run created are deleted, whatever the result.
    --grant-run-access creates the controller's RoleBinding; without it none is made and
    stderr says the namespace has none. No controller runs, so the wait ends first (exit 5)."""
    run = nvcrectl(kubeconfig, "certification", "run", "--category", "diagnostics/dcgm-level4", "--wait",
                   "--timeout", "3s", "--cleanup", "--grant-run-access", "-o", "json")
    assert run.returncode == 5, run.stderr
    ns = re.search(r"namespace/(nvcrectl-\d{8}-\d{6}) created", run.stderr).group(1)
    assert "rolebinding/nvcre-manager-run created (--grant-run-access)" in run.stderr
    assert json.loads(run.stdout)["result"] == "RUNNING"  # stdout is the report alone
    assert "timed out after 3s; --cleanup removes the run now" in run.stderr
    assert f"certification.nvcre.nvidia.com/{ns} deleted" in run.stderr
    assert f"namespace/{ns} deleted (nvcrectl created it for this run)" in run.stderr
    assert "[cleanup] done" in run.stderr and "warning" not in run.stderr
    assert kube.get(NVCRE_API_VERSION, "Certification", ns, ns) is None
    left = kubectl("get", "namespace", ns, "-o", "jsonpath={.status.phase}", check=False)
    assert left.returncode != 0 or left.stdout == "Terminating", left.stdout

    plain = nvcrectl(kubeconfig, "certification", "run", "--category", "diagnostics/dcgm-level4")
    assert plain.returncode == 0, plain.stderr
    ns2 = re.search(r"namespace/(nvcrectl-\d{8}-\d{6}) created", plain.stderr).group(1)
    try:
        assert f"note: no RoleBinding nvcre-manager-run in {ns2}" in plain.stderr and "--grant-run-access" in plain.stderr
        bindings = kubectl("get", "rolebindings", "-n", ns2, "-o", "name").stdout
        assert "nvcre-manager-run" not in bindings
    finally:
        nvcrectl(kubeconfig, "certification", "cleanup", ns2, "-n", ns2)


def test_bad_lifecycle_flags_change_nothing(kube, kubeconfig):
    """A reference command line whose --image is the controller image is refused before
    anything is created, and so is --cleanup without --wait."""
    def names():
        return {ns["metadata"]["name"] for ns in kube.list("v1", "Namespace")}

    before = names()  # names, not a count: an earlier test's namespace may finish terminating meanwhile
    for args, words in ((["--setup", "--image", "ghcr.io/nvidia/manager:v1"], "give --controller-image"),
                        (["--cleanup"], "--cleanup needs --wait")):
        run = nvcrectl(kubeconfig, "certification", "run", "--category", "diagnostics/dcgm-level4", *args)
        assert run.returncode == 2 and words in run.stderr and run.stdout == "", run.stderr
    assert names() <= before, names() - before
