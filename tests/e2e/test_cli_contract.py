"""The CLI contract a script relies on, end to end on the simulated fleet: every machine
format parses with nothing else on stdout, and each exit code of the table comes out
for its cause: 0 passed, 1 failed, 2 bad input, 3 unreachable server and bad token,
4 not finished (report of a running run), 5 the wait timed out. No traceback anywhere.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import yaml

from nvcre.kube.resources import NVCRE_API_VERSION

NVCRECTL = str(Path(sys.executable).with_name("nvcrectl"))


def nvcrectl(kubeconfig: str, *args: str, timeout: float = 420) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run([NVCRECTL, *args], capture_output=True, text=True, timeout=timeout,
                         env={**env, "KUBECONFIG": kubeconfig})
    assert "Traceback" not in out.stderr, out.stderr
    return out


def _cert(name: str, threshold: str | None = None) -> dict:
    options = {"testScale": "intra-node", "timeoutPerJob": "10m"}
    if threshold:
        options["thresholds"] = {"busBandwidthGBps": threshold}
    return {
        "apiVersion": NVCRE_API_VERSION, "kind": "Certification", "metadata": {"name": name},
        "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                 "categories": [{"domain": "communication", "variant": "nccl-loopback", "options": options}]},
    }


WORKLOAD_RUN = {
    "apiVersion": NVCRE_API_VERSION, "kind": "WorkloadRun", "metadata": {"name": "contract-wr"},
    "spec": {"image": "nvcr.io/nvidia/pytorch:26.01-py3", "numNodes": 2,
             "framework": {"mpi": {"binary": "/usr/local/bin/all_reduce_perf_mpi", "mpirunPath": "/usr/local/mpi/bin/mpirun",
                                   "args": ["-b", "8", "-e", "1G", "-f", "2", "-n", "20"]}},
             "orchestration": {"placement": "Unpinned"},
             "bandwidthMeasurement": {"logProfileRef": "nccl-bandwidth", "testType": "all_reduce"}},
}


def _write(tmp_path: Path, name: str, obj: dict) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(obj))
    return str(path)


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.add(tag)


PARSERS = {
    "json": json.loads,
    "yaml": yaml.safe_load,
    "junit": ET.fromstring,
}


def _parse(fmt: str, text: str):
    if fmt in PARSERS:
        return PARSERS[fmt](text)
    if fmt == "markdown":
        assert text.startswith("# Certification "), text[:200]
        return text
    if fmt == "html":
        parser = _Html()
        parser.feed(text)
        assert {"html", "body", "svg"} <= parser.tags and text.lstrip().lower().startswith("<!doctype html")
        return text
    raise AssertionError(fmt)


def _ns(stderr: str) -> str:
    return re.search(r"namespace/(nvcrectl-\d{8}-\d{6}) created", stderr).group(1)


def test_formats_and_exit_codes(sim_fleet, controller, kube, kubeconfig, tmp_path, monkeypatch):
    sim_fleet.start("healthy.yaml", nodes=2, racks=1)
    # the node readiness ledger goes to a namespace of this test's own (the controller reads the variable)
    ledger_ns = f"nvcre-ledger-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ledger_ns}})
    monkeypatch.setenv("NVCRE_LEDGER_NAMESPACE", ledger_ns)

    # 5: the wait ends first (no controller yet); stdout is the partial report alone
    run = nvcrectl(kubeconfig, "certification", "run", "-f", _write(tmp_path, "pass", _cert("contract-pass", "value >= 1")),
                   "--wait", "--timeout", "3s", "-o", "json")
    assert run.returncode == 5, run.stderr
    assert json.loads(run.stdout)["result"] == "RUNNING"
    assert "timed out after 3s" in run.stderr
    ns = _ns(run.stderr)
    # 4: the report of a run that has not finished
    running = nvcrectl(kubeconfig, "certification", "report", "contract-pass", "-n", ns, "-o", "yaml")
    assert running.returncode == 4 and yaml.safe_load(running.stdout)["result"] == "RUNNING"

    controller.start()
    deadline = time.monotonic() + 300
    while True:
        done = nvcrectl(kubeconfig, "certification", "report", "contract-pass", "-n", ns, "-o", "json")
        if json.loads(done.stdout)["result"] != "RUNNING" or time.monotonic() > deadline:
            break
        time.sleep(2)
    # 0: passed, and every machine format is only its document
    assert done.returncode == 0, done.stdout + controller.log_tail()
    for fmt in ("json", "yaml", "junit", "markdown", "html"):
        out = nvcrectl(kubeconfig, "certification", "report", "contract-pass", "-n", ns, "-o", fmt)
        assert out.returncode == 0 and out.stderr == "", (fmt, out.stderr)
        _parse(fmt, out.stdout)
    names = nvcrectl(kubeconfig, "certification", "report", "contract-pass", "-n", ns, "-o", "name")
    assert names.returncode == 0 and names.stdout == ""  # no failed node to cordon
    text = nvcrectl(kubeconfig, "certification", "report", "contract-pass", "-n", ns)
    assert "Result:       PASSED" in text.stdout and all(len(line) <= 80 for line in text.stdout.splitlines())

    # 1: a FAILED verdict, with --wait and -o json: stdout parses, progress went to stderr
    failing = _write(tmp_path, "fail", _cert("contract-fail", "value >= 100000"))
    run = nvcrectl(kubeconfig, "certification", "run", "-f", failing, "--wait", "--timeout", "5m", "-o", "json")
    assert run.returncode == 1, run.stdout + run.stderr + controller.log_tail()
    report = json.loads(run.stdout)
    assert report["result"] == "FAILED" and report["failedNodes"]
    assert "waiting up to 5m00s for certification contract-fail (--timeout)" in run.stderr and "created in namespace" in run.stderr
    fail_ns = _ns(run.stderr)
    cordon = nvcrectl(kubeconfig, "certification", "report", "contract-fail", "-n", fail_ns, "-o", "name")
    assert cordon.returncode == 1
    assert cordon.stdout.split() == [f"node/{n}" for n in report["failedNodes"]]
    failed = report["categories"][0]["failedNodes"][0]
    ev = failed["evidence"]
    assert ev["measured"].endswith(" GB/s") and ev["bar"] == "value >= 100000" and ev["nextStep"]
    # the failed Job kept the node's own pod: the evidence names it and shows its tail
    assert ev["pod"] and ev["node"] == failed["name"] and ev["logTail"], ev

    # the listing: every listing format, the runs with their results
    listed = nvcrectl(kubeconfig, "certification", "list", "-o", "json")
    assert listed.returncode == 0 and listed.stderr == ""
    results = {(i["namespace"], i["name"]): i["result"] for i in json.loads(listed.stdout)["items"]}
    assert results[(ns, "contract-pass")] == "PASSED" and results[(fail_ns, "contract-fail")] == "FAILED"
    assert yaml.safe_load(nvcrectl(kubeconfig, "certification", "list", "-o", "yaml").stdout)["items"]
    names = nvcrectl(kubeconfig, "certification", "list", "-n", ns, "-o", "name").stdout
    assert names == "certification.nvcre.nvidia.com/contract-pass\n"
    wide = nvcrectl(kubeconfig, "certification", "list", "-o", "wide").stdout
    assert "FAILED NODES" in wide and "contract-fail" in wide

    # the node readiness ledger the runs wrote: every listing format
    ledger = nvcrectl(kubeconfig, "nodes", "-n", ledger_ns, "-o", "json")
    assert ledger.returncode == 0 and ledger.stderr == ""
    rows = json.loads(ledger.stdout)["nodes"]
    assert rows and yaml.safe_load(nvcrectl(kubeconfig, "nodes", "-n", ledger_ns, "-o", "yaml").stdout)["nodes"] == rows
    assert nvcrectl(kubeconfig, "nodes", "-n", ledger_ns, "-o", "name").stdout.split() == [r["node"] for r in rows]
    for fmt in ("table", "wide"):
        out = nvcrectl(kubeconfig, "nodes", "-n", ledger_ns, "-o", fmt, "--result", "Failed")
        assert out.returncode == 0 and set(report["failedNodes"]) <= set(out.stdout.split()), out.stdout
    assert "FAILING" in nvcrectl(kubeconfig, "nodes", "-n", ledger_ns, "-o", "wide").stdout

    # without --wait: the created object alone on stdout, in the format asked for
    quick = nvcrectl(kubeconfig, "certification", "run", "-c", "communication/nccl-loopback", "--test-scale",
                     "intra-node", "-o", "json")
    assert quick.returncode == 0 and json.loads(quick.stdout)["kind"] == "Certification"
    quick_ns = _ns(quick.stderr)
    named = nvcrectl(kubeconfig, "certification", "run", "-c", "communication/nccl-loopback", "-n", quick_ns,
                     "--name", "by-name", "-o", "name")
    assert named.returncode == 0 and named.stdout == "certification.nvcre.nvidia.com/by-name\n"

    # a WorkloadRun: its report in every machine format, and its listing in every listing format
    run_file = _write(tmp_path, "wr", WORKLOAD_RUN)
    wr_ns = f"contract-wr-{uuid.uuid4().hex[:6]}"
    wr = nvcrectl(kubeconfig, "workloadrun", "run", run_file, "-n", wr_ns, "--wait", "--timeout", "5m", "-o", "json")
    assert wr.returncode == 0 and json.loads(wr.stdout)["kind"] == "WorkloadRun", wr.stderr + controller.log_tail()
    assert f"namespace/{wr_ns} created" in wr.stderr
    for fmt in ("json", "yaml", "junit", "markdown", "html"):
        out = nvcrectl(kubeconfig, "workloadrun", "report", "contract-wr", "-n", wr_ns, "-o", fmt)
        assert out.returncode == 0 and out.stderr == "", (fmt, out.stderr)
        if fmt == "markdown":
            assert out.stdout.startswith("# WorkloadRun `contract-wr`"), out.stdout[:200]
        else:
            _parse(fmt, out.stdout)
    for fmt in ("json", "yaml"):
        out = nvcrectl(kubeconfig, "workloadrun", "list", "-n", wr_ns, "-o", fmt)
        assert out.returncode == 0 and out.stderr == ""
        assert [i["name"] for i in PARSERS[fmt](out.stdout)["items"]] == ["contract-wr"]
    assert nvcrectl(kubeconfig, "workloadrun", "list", "-n", wr_ns, "-o", "name").stdout == \
        "workloadrun.nvcre.nvidia.com/contract-wr\n"
    for fmt in ("table", "wide"):
        out = nvcrectl(kubeconfig, "workloadrun", "list", "-n", wr_ns, "-o", fmt)
        assert out.returncode == 0 and "contract-wr" in out.stdout and "PASSED" in out.stdout, out.stdout

    # 2: bad input names the field; nothing on stdout
    bad = _cert("contract-bad")
    bad["spec"]["categories"][0]["variant"] = "nccl-nonsense"
    out = nvcrectl(kubeconfig, "certification", "run", "-f", _write(tmp_path, "bad", bad))
    assert out.returncode == 2 and out.stdout == "" and "spec.categories[0]" in out.stderr

    # 3: an unreachable server and a bad token, each one line naming where it tried
    admin = yaml.safe_load(Path(kubeconfig).read_text())
    cluster = admin["clusters"][0]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for label, server, user in (
        ("unreachable", f"https://127.0.0.1:{port}", {"token": "whatever"}),
        ("bad-token", cluster["cluster"]["server"], {"token": "not-a-valid-token"}),
    ):
        config = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "c", "cluster": {**cluster["cluster"], "server": server}}],
            "users": [{"name": label, "user": user}],
            "contexts": [{"name": f"ctx-{label}", "context": {"cluster": "c", "user": label}}],
            "current-context": f"ctx-{label}",
        }
        path = tmp_path / f"{label}.kubeconfig"
        path.write_text(yaml.safe_dump(config))
        for args in (("certification", "report", "contract-pass", "-n", ns, "-o", "json"),
                     ("cluster", "info", "-o", "yaml")):
            out = nvcrectl(str(path), *args, "--kubeconfig", str(path))
            assert out.returncode == 3, (label, args, out.stderr)
            assert out.stdout == ""
            line = out.stderr.strip()
            assert "\n" not in line and server in line and f"ctx-{label}" in line and str(path) in line, line
            assert ("connection refused" if label == "unreachable" else "401 Unauthorized") in line, line
            assert "urllib3" not in line and "Max retries" not in line

    # cluster info as documents on the real cluster
    for fmt, parse in (("json", json.loads), ("yaml", yaml.safe_load)):
        out = nvcrectl(kubeconfig, "cluster", "info", "-o", fmt)
        assert out.returncode == 0 and parse(out.stdout)["gpuNodes"] == 2

    for name, where in (("contract-pass", ns), ("contract-fail", fail_ns)):
        nvcrectl(kubeconfig, "certification", "cleanup", name, "-n", where)
    nvcrectl(kubeconfig, "workloadrun", "cleanup", "contract-wr", "-n", wr_ns)
    kube.delete("v1", "Namespace", quick_ns)
    kube.delete("v1", "Namespace", ledger_ns)
