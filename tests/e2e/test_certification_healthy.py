"""A healthy simulated fleet passes every catalog category, with the bandwidth per
message size and the transport recorded for the communication categories."""

from __future__ import annotations

from nvcre.kube.resources import NVCRE_API_VERSION

ALL_CATEGORIES = [
    ("communication", "nccl-all-reduce"),
    ("communication", "nccl-all-gather"),
    ("communication", "nccl-alltoall"),
    ("communication", "nccl-loopback"),
    ("communication", "nccl-loopback-nvswitch"),
    ("diagnostics", "dcgm-level4"),
    ("training", "nemotron5-8b"),
    ("training", "nemotron5-56b"),
]


def test_healthy_fleet_passes_every_category(sim_fleet, controller, kube, namespace, e2e):
    sim_fleet.start("healthy.yaml", nodes=8, racks=2)
    controller.start()
    categories = [{"domain": d, "variant": v} for d, v in ALL_CATEGORIES]
    categories[0]["options"] = {"thresholds": {"busBandwidthGBps": "value >= 100"}}
    # every category that measures something gets a bar, so the run is judged (not NOT JUDGED)
    for cat in categories[1:]:
        if cat["domain"] == "communication":
            cat["options"] = {"thresholds": {"busBandwidthGBps": "value >= 1"}}
        elif cat["domain"] == "training":
            cat["options"] = {"thresholds": {"goodputRatio": "value > 0"}}
    e2e.apply(kube, e2e.certification("healthy", namespace, categories))
    cert = e2e.wait_terminal(kube, "Certification", "healthy", namespace, 900, controller)

    st = cert["status"]
    statuses = {(c["domain"], c["variant"]): c["status"] for c in st["categoryStatuses"]}
    assert statuses == {key: "Succeeded" for key in ALL_CATEGORIES}, st
    assert e2e.true_condition(cert, "Succeeded")["reason"] == "AllWorkflowsSucceeded"
    assert st["summary"]["result"] == "PASSED"
    assert st["summary"]["categoriesPassed"] == f"{len(ALL_CATEGORIES)}/{len(ALL_CATEGORIES)}"
    assert not st.get("failedNodes")

    for entry in st["categoryStatuses"]:
        wf = kube.get(NVCRE_API_VERSION, "Workflow", entry["workflowRef"]["name"], namespace)
        if entry["domain"] == "training":
            # Megatron prints steps on the last rank only: goodput needs both workers' logs
            gms = kube.list(NVCRE_API_VERSION, "GoodputMeasurement", namespace,
                            label_selector=f"nvcre.nvidia.com/workflow={wf['metadata']['name']}")
            assert gms and all(0.0 < float(g["status"]["result"]) <= 1.0 for g in gms), [{k: v for k, v in g["status"].items() if k != "conditions"} for g in gms]
            assert all(float(g["status"]["trainingTimeSec"]) > 0 for g in gms)
        if entry["domain"] != "communication":
            continue
        table = wf["status"].get("bandwidth") or []
        assert len(table) >= 5, (entry["variant"], table)  # one row per message size
        sizes = [row["sizeBytes"] for row in table]
        assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
        assert all(row["busBwGBps"] > 0 for row in table[-3:])
        assert wf["status"].get("transport"), entry["variant"]
        bms = kube.list(NVCRE_API_VERSION, "BandwidthMeasurement", namespace,
                        label_selector=f"nvcre.nvidia.com/workflow={wf['metadata']['name']}")
        assert bms and all(e2e.true_condition(b, "Complete")["reason"] == "JobSucceeded" for b in bms)
    allreduce = kube.get(NVCRE_API_VERSION, "Workflow", st["categoryStatuses"][0]["workflowRef"]["name"], namespace)
    assert allreduce["status"]["transport"] == ["IB"]
    assert e2e.true_condition(allreduce, "ValidationFailed") is None
