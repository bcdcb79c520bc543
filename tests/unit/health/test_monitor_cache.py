"""A Node update that changes nothing the detectors read (a heartbeat) keeps its verdict:
the next pass over the fleet is warm, not a fresh CEL evaluation of every Node."""

from __future__ import annotations

import copy

from nvcre.health import detectors as d
from nvcre.sim.fleet import FleetSpec, build_fleet


def test_heartbeats_do_not_make_the_next_pass_cold(monkeypatch):
    nodes = build_fleet(FleetSpec(nodes=8, racks=1)).nodes
    for i, n in enumerate(nodes):
        n["metadata"].update(uid=f"u{i}", resourceVersion="1")
    monitor = d.NodeHealthMonitor(d.detectors_for_job("node.spec.unschedulable == true"))
    monitor.evaluate(nodes)
    beat = copy.deepcopy(nodes)
    for n in beat:
        n["metadata"]["resourceVersion"] = "2"
        n["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-12-02T01:00:00Z"
    calls = []
    real = d.cel.Context
    monkeypatch.setattr(d.cel, "Context", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert monitor.evaluate(beat) == []
    assert calls == []
    # a change the detectors do read is evaluated again
    cordoned = copy.deepcopy(beat)
    cordoned[3]["metadata"]["resourceVersion"] = "3"
    cordoned[3]["spec"]["unschedulable"] = True
    found = monitor.evaluate(cordoned)
    assert [f["node"] for f in found] == [cordoned[3]["metadata"]["name"]] and len(calls) == 1
