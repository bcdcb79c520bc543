"""The controller's /metrics: values, bounded labels, and the Prometheus naming rules,
checked on a real scrape of the HTTP endpoint parsed with the official client's parser."""

from __future__ import annotations

import re
import threading
import time
import urllib.request

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from nvcre.controller import conditions as c
from nvcre.controller.context import Context
from nvcre.controller.runtime.metrics import OTHER_NODES, ControllerMetrics
from nvcre.controller.runtime.operator import Controller

WF = {"nvcre.nvidia.com/workflow": "wf"}
# A name says its unit as the last word(s) or counts things (Prometheus naming guide).
UNIT_SUFFIXES = ("_seconds", "_bytes", "_bytes_per_second", "_flops_per_second", "_ratio", "_total", "_status", "_info")
COUNTING = {"nvcre_nccl_measurements", "workqueue_depth", "process_open_fds", "process_max_fds"}


def _obj(kind, name, phase, reason, labels=None, **extra):
    conds: list[dict] = []
    c.set_phase(conds, phase, reason)
    return {"kind": kind, "metadata": {"name": name, "namespace": "ns", "labels": labels or {}}, "status": {"conditions": conds, **extra}}


def _bw(name, workflow, rows, test="all_reduce"):
    return {
        "kind": "BandwidthMeasurement",
        "metadata": {"name": name, "namespace": "ns", "labels": {"nvcre.nvidia.com/workflow": workflow}},
        "spec": {"jobRef": {"name": name.removesuffix("-bandwidth")}, "testType": test},
        "status": {"results": rows},
    }


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_status_gauges_and_timed_out_job_counts_failed():
    m = ControllerMetrics()
    m.store.put(_obj("Certification", "cert", c.IN_PROGRESS, "WorkflowCreated"))
    job = _obj("Job", "j1", c.IN_PROGRESS, "WorkloadRunning", WF)
    # a timeout written beside InProgress must count as failed only
    c.set_condition(job["status"]["conditions"], c.FAILED, True, "JobTimedOut", "late")
    m.store.put(job)
    text = generate_latest(m.registry).decode()
    assert 'nvcre_certification_status{certification="cert",namespace="ns",status="in_progress"} 1.0' in text
    assert 'nvcre_job_status{job="j1",namespace="ns",status="failed",workflow="wf"} 1.0' in text
    assert 'nvcre_job_status{job="j1",namespace="ns",status="in_progress",workflow="wf"} 0.0' in text


def test_bandwidth_is_per_workflow_in_bytes_per_second():
    """Peak bus bandwidth of each measurement (max over sizes, GB/s from nccl-tests), the
    slowest and fastest per workflow, in bytes per second; no per-job or per-size series."""
    m = ControllerMetrics()
    m.store.put(_bw("g0-bandwidth", "wf", [{"sizeBytes": 1024, "algBW": "1.5", "busBW": "2.5"}, {"sizeBytes": 4096, "algBW": "90", "busBW": "180.5"}]))
    m.store.put(_bw("g1-bandwidth", "wf", [{"sizeBytes": 4096, "algBW": "45", "busBW": "90.25"}]))
    m.store.put(_bw("g2-bandwidth", "wf", [{"sizeBytes": 4096, "algBW": "nan", "busBW": "not a number"}]))
    s = _samples(generate_latest(m.registry).decode())
    key = (("namespace", "ns"), ("nccl_test", "all_reduce"), ("workflow", "wf"))
    assert s[("nvcre_nccl_bus_bandwidth_max_bytes_per_second", key)] == pytest.approx(180.5e9)
    assert s[("nvcre_nccl_bus_bandwidth_min_bytes_per_second", key)] == pytest.approx(90.25e9)
    assert s[("nvcre_nccl_algorithm_bandwidth_min_bytes_per_second", key)] == pytest.approx(45e9)
    assert s[("nvcre_nccl_measurements", key)] == 2
    assert not [n for n, labels in s if any(k in ("job", "measurement", "message_size_bytes") for k, _ in labels)]


def test_goodput_per_workflow_takes_the_worst_value():
    m = ControllerMetrics()
    for name, ratio, tflops, step in (("a", "0.93", "410.5", "2.0"), ("b", "0.80", "500", "2.5")):
        m.store.put({
            "kind": "GoodputMeasurement",
            "metadata": {"name": f"{name}-goodput", "namespace": "ns", "labels": WF},
            "status": {"result": ratio, "avgTFLOPSPerGPU": tflops, "avgStepTimeSec": step},
        })
    s = _samples(generate_latest(m.registry).decode())
    key = (("namespace", "ns"), ("workflow", "wf"))
    assert s[("nvcre_goodput_ratio", key)] == pytest.approx(0.80)
    assert s[("nvcre_goodput_gpu_flops_per_second", key)] == pytest.approx(410.5e12)
    assert s[("nvcre_goodput_step_duration_seconds", key)] == pytest.approx(2.5)


def test_node_detail_is_opt_in_and_bounded():
    off = ControllerMetrics()
    for i in range(50):
        off.hardware_failures.labels(namespace="ns", job=f"j{i}", workflow="wf", node=f"n{i}").inc()
    s = _samples(generate_latest(off.registry).decode())
    assert s[("nvcre_hardware_failures_detected_total", (("namespace", "ns"), ("workflow", "wf")))] == 50
    on = ControllerMetrics(node_detail_limit=3)
    for i in range(50):
        on.hardware_failures.labels(namespace="ns", job=f"j{i}", workflow="wf", node=f"n{i % 10}").inc()
    s = _samples(generate_latest(on.registry).decode())
    nodes = {dict(labels)["node"]: v for (n, labels), v in s.items() if n == "nvcre_hardware_failures_detected_total"}
    assert set(nodes) == {"n0", "n1", "n2", OTHER_NODES}
    assert nodes["n0"] == 5 and nodes[OTHER_NODES] == 35


def test_scraped_endpoint_follows_prometheus_conventions():
    """Drive a real Controller (queue, workers, a failing and a passing reconciler), scrape
    its HTTP endpoint, parse with prometheus_client's parser and check every name."""
    calls = {"n": 0}

    def ok(ctx, ns, name):
        time.sleep(0.01)
        return None

    def flaky(ctx, ns, name):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("API outage")
        return 0.05 if calls["n"] == 2 else None

    metrics = ControllerMetrics()
    ctx = Context(kube=None, metrics=metrics)  # type: ignore[arg-type]
    controller = Controller(ctx, {"Certification": ok, "Job": flaky})
    stop = threading.Event()
    controller.stop = stop
    from nvcre.controller.runtime.queue import run_workers

    run_workers(controller.queue, controller.handle, count=2, stop=stop)
    controller.queue.add(("Certification", "ns", "cert"))
    controller.queue.add(("Job", "ns", "j"))
    deadline = time.monotonic() + 20
    while calls["n"] < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    port = metrics.serve(0)
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    finally:
        stop.set()
        controller.queue.close()
        metrics.close()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    s = _samples(text)
    for name in ("workqueue_depth", "workqueue_adds", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
                 "workqueue_retries", "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds",
                 "nvcre_reconcile_duration_seconds", "nvcre_reconcile", "process_cpu_seconds", "process_resident_memory_bytes"):
        assert name in families, f"{name} missing from /metrics"
    assert s[("workqueue_retries_total", (("name", "nvcre"),))] == 1
    assert s[("workqueue_adds_total", (("name", "nvcre"),))] >= 4  # two adds, a retry, a requeue
    assert s[("nvcre_reconcile_total", (("kind", "Job"), ("result", "error")))] == 1
    assert s[("nvcre_reconcile_total", (("kind", "Job"), ("result", "requeue")))] == 1
    assert s[("nvcre_reconcile_duration_seconds_count", (("kind", "Job"),))] == 3
    assert s[("nvcre_reconcile_duration_seconds_bucket", (("kind", "Certification"), ("le", "+Inf")))] == 1
    assert not [n for n, _ in s if n.endswith("_created")], "no _created series"
    for name, family in families.items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name), name
        assert family.documentation and family.documentation.rstrip(".") != name, f"{name}: HELP is missing or repeats the name"
        assert "gbs" not in name and "gbps" not in name and "tflops" not in name, f"{name}: not a base unit"
        if family.type == "counter":
            assert all(sm.name == name + "_total" for sm in family.samples), f"{name}: a counter ends in _total"
        elif family.type == "histogram":
            assert name.endswith(("_seconds", "_bytes")), f"{name}: a histogram says its unit"
        elif name.startswith("nvcre_") and name not in COUNTING:
            assert name.endswith(UNIT_SUFFIXES), f"{name}: a gauge says its unit (or counts things)"


def test_the_controller_metrics_read_the_reconcilers_cache(monkeypatch):
    """The gauges project the one watch cache the reconcilers fill (a second store stays empty)."""
    from nvcre.controller import main

    monkeypatch.setattr(main.KubeClient, "from_kubeconfig", staticmethod(lambda path: object()))
    monkeypatch.setattr(main.ControllerMetrics, "count_requests", lambda self, kube: None)
    controller = main.build(None)
    assert controller.ctx.metrics.store is controller.ctx.cache


def test_node_readiness_stage_label_is_bounded_to_the_stages_and_none():
    """One series per node whatever a record says: an unknown stage reads as none."""
    from nvcre.controller.ledger_metrics import STAGE_LABELS

    m = ControllerMetrics()
    for i, stage in enumerate(("production", "burn-in", "made-up-stage", None, "x" * 200)):
        m.store.put({"kind": "NodeReadiness", "metadata": {"name": f"n{i}", "namespace": "nvcre-system"},
                     "spec": {"nodeName": f"n{i}"}, "status": {"stageCleared": stage, "lastResult": "Passed"}})
    s = _samples(generate_latest(m.registry).decode())
    series = {dict(labels)["node"]: dict(labels)["stage"] for n, labels in s if n == "nvcre_node_readiness_status"}
    assert series == {"n0": "production", "n1": "burn-in", "n2": "none", "n3": "none", "n4": "none"}
    assert set(STAGE_LABELS) == {"bring-up", "burn-in", "preproduction", "production", "none"}


def _running_bw(name, rows, complete=False):
    bw = _bw(name, "wf", rows)
    bw["metadata"]["labels"]["nvcre.nvidia.com/job"] = name.removesuffix("-bandwidth")
    if complete:
        bw["status"]["conditions"] = [{"type": "Complete", "status": "True", "reason": "JobSucceeded"}]
    return bw


def test_reference_nccl_gauges_are_opt_in_with_the_reference_lifecycle():
    """--reference-metrics: the reference's GB/s gauges and _gbps aliases per measurement and
    message size, scraped over HTTP and parsed with the official parser; a measurement that
    completes or is deleted loses its series; nvcre's own gauges are unchanged."""
    rows = [{"sizeBytes": 1024, "algBW": "1.5", "busBW": "2.5"}, {"sizeBytes": 4096, "algBW": "90", "busBW": "180.5"}]
    off = ControllerMetrics()
    off.store.put(_running_bw("g0-bandwidth", rows))
    assert not [n for n, _ in _samples(generate_latest(off.registry).decode()) if "gbs" in n or "gbps" in n]

    m = ControllerMetrics(reference_compatible=True)
    m.store.put(_running_bw("g0-bandwidth", rows))
    m.store.put(_running_bw("g1-bandwidth", rows, complete=True))
    port = m.serve(0)
    try:
        scrape = lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()  # noqa: E731
        text = scrape()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        s = _samples(text)
        key = (("job", "g0"), ("measurement", "g0-bandwidth"), ("message_size_bytes", "4096"), ("namespace", "ns"),
               ("nccl_test", "all_reduce"), ("workflow", "wf"))
        for name, value in (("nvcre_nccl_busbw_gbs", 180.5), ("nvcre_nccl_busbw_gbps", 180.5),
                            ("nvcre_nccl_algbw_gbs", 90.0), ("nvcre_nccl_algbw_gbps", 90.0)):
            assert families[name].type == "gauge" and families[name].documentation
            assert s[(name, key)] == pytest.approx(value), name
            assert {dict(labels)["measurement"] for n, labels in s if n == name} == {"g0-bandwidth"}, "a Complete one has no series"
            assert len([1 for n, _ in s if n == name]) == 2  # one per message size
        assert "Deprecated" in families["nvcre_nccl_busbw_gbps"].documentation
        bw_key = (("namespace", "ns"), ("nccl_test", "all_reduce"), ("workflow", "wf"))
        assert s[("nvcre_nccl_bus_bandwidth_max_bytes_per_second", bw_key)] == pytest.approx(180.5e9)

        m.store.put(_running_bw("g0-bandwidth", rows, complete=True))  # completes
        m.store.put(_running_bw("g2-bandwidth", rows))
        m.store.drop("BandwidthMeasurement", "ns", "g2-bandwidth")  # deleted while running
        after = _samples(scrape())
        assert not [n for n, _ in after if "gbs" in n or "gbps" in n]
        assert after[("nvcre_nccl_bus_bandwidth_max_bytes_per_second", bw_key)] == pytest.approx(180.5e9)
    finally:
        m.close()


def test_reference_metrics_flag_reaches_the_registry(monkeypatch):
    from nvcre.controller import main
    from nvcre.controller.context import Settings

    monkeypatch.setattr(main.KubeClient, "from_kubeconfig", staticmethod(lambda path: object()))
    monkeypatch.setattr(main.ControllerMetrics, "count_requests", lambda self, kube: None)
    for on in (False, True):
        controller = main.build(None, Settings(reference_metrics=on))
        controller.ctx.cache.put(_running_bw("g0-bandwidth", [{"sizeBytes": 8, "algBW": "1", "busBW": "2"}]))
        assert ("nvcre_nccl_busbw_gbs" in generate_latest(controller.ctx.metrics.registry).decode()) is on


@pytest.mark.parametrize("argv,expected", [([], False), (["--reference-metrics"], True)])
def test_cli_reference_metrics_flag_sets_the_setting(monkeypatch, argv, expected):
    from nvcre.cli.main import main
    from nvcre.controller import logs
    from nvcre.controller import main as controller_main

    seen = {}
    monkeypatch.setattr(controller_main, "serve", lambda kubeconfig, **kw: seen.update(kw))
    monkeypatch.setattr(logs, "configure", lambda level, fmt: None)
    assert main(["controller", "run", *argv]) == 0
    assert seen["settings"].reference_metrics is expected
