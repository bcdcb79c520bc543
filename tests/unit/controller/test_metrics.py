from prometheus_client import generate_latest

from nvcre.controller import conditions as c
from nvcre.controller.metrics import ControllerMetrics


def _obj(kind, name, phase, reason, labels=None, **extra):
    conds: list[dict] = []
    c.set_phase(conds, phase, reason)
    return {"kind": kind, "metadata": {"name": name, "namespace": "ns", "labels": labels or {}}, "status": {"conditions": conds, **extra}}


def test_status_gauges_and_timed_out_job_counts_failed():
    m = ControllerMetrics()
    m.store.put(_obj("Certification", "cert", c.IN_PROGRESS, "WorkflowCreated"))
    job = _obj("Job", "j1", c.IN_PROGRESS, "WorkloadRunning", {"nvcre.nvidia.com/workflow": "wf"})
    # a timeout written beside InProgress must count as failed only
    c.set_condition(job["status"]["conditions"], c.FAILED, True, "JobTimedOut", "late")
    m.store.put(job)
    text = generate_latest(m.registry).decode()
    assert 'nvcre_certification_status{certification="cert",namespace="ns",status="in_progress"} 1.0' in text
    assert 'nvcre_job_status{job="j1",namespace="ns",status="failed",workflow="wf"} 1.0' in text
    assert 'nvcre_job_status{job="j1",namespace="ns",status="in_progress",workflow="wf"} 0.0' in text


def test_bandwidth_and_goodput_gauges_carry_workflow():
    m = ControllerMetrics()
    m.store.put({
        "kind": "BandwidthMeasurement",
        "metadata": {"name": "j-bandwidth", "namespace": "ns", "labels": {"nvcre.nvidia.com/workflow": "wf"}},
        "spec": {"jobRef": {"name": "j"}, "testType": "all_reduce"},
        "status": {"results": [{"sizeBytes": 1024, "algBW": "1.5", "busBW": "2.5", "samples": 1}]},
    })
    m.store.put({
        "kind": "GoodputMeasurement",
        "metadata": {"name": "j-goodput", "namespace": "ns", "labels": {"nvcre.nvidia.com/workflow": "wf"}},
        "spec": {"jobRef": {"name": "j"}},
        "status": {"result": "0.93", "avgTFLOPSPerGPU": "410.5"},
    })
    text = generate_latest(m.registry).decode()
    assert 'nvcre_nccl_busbw_gbs{job="j",measurement="j-bandwidth",message_size_bytes="1024",namespace="ns",nccl_test="all_reduce",workflow="wf"} 2.5' in text
    # the reference's deprecated _gbps spellings carry the same values
    assert 'nvcre_nccl_busbw_gbps{job="j",measurement="j-bandwidth",message_size_bytes="1024",namespace="ns",nccl_test="all_reduce",workflow="wf"} 2.5' in text
    assert "nvcre_nccl_algbw_gbps{" in text
    assert 'nvcre_goodput_ratio{job="j",measurement="j-goodput",namespace="ns",workflow="wf"} 0.93' in text
