"""trainjob adapter shapes that the real JobSet and Trainer admission webhooks insist on
(found by running the adapter against Trainer v2.0.0 and JobSet v0.8.2 on the test bed;
still what Trainer v2.3.0 and JobSet v0.12.0 admit)."""

from __future__ import annotations

from nvcre.catalog.resolve import resolve_category
from nvcre.workloads.render import render_workload


def _runtime(variant: str, **kw) -> dict:
    r = resolve_category({"domain": "communication", "variant": variant}, None, platform="aws", gpu_arch="h100", **kw)
    objs = render_workload(r, name="w", namespace="ns", nodes=["a", "b"], adapter="trainjob")
    return [o for o in objs if o["kind"] == "TrainingRuntime"][0]


def test_depends_on_only_names_an_earlier_replicated_job():
    """JobSet rejects dependsOn on the first replicatedJob and on a later one."""
    rjobs = _runtime("nccl-all-reduce")["spec"]["template"]["spec"]["replicatedJobs"]
    names = [rj["name"] for rj in rjobs]
    assert names == ["node", "launcher"]
    for index, rj in enumerate(rjobs):
        for dep in rj.get("dependsOn") or []:
            assert dep["name"] in names[:index], (rj["name"], dep)
    assert rjobs[1]["dependsOn"] == [{"name": "node", "status": "Ready"}]


def test_kai_keeps_the_same_order_without_the_gate():
    rjobs = _runtime("nccl-all-reduce", gang_scheduler={"schedulerName": "kai-scheduler", "queue": "q"})[
        "spec"]["template"]["spec"]["replicatedJobs"]
    assert [rj["name"] for rj in rjobs] == ["node", "launcher"]
    assert all("dependsOn" not in rj for rj in rjobs)
