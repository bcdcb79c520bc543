"""A Certification whose target matches no node waits (WaitingForNodes) for a bounded
time and then fails; an unknown category fails before anything is created."""

from __future__ import annotations

from nvcre.kube.resources import NVCRE_API_VERSION


def test_waits_for_nodes_then_fails(sim_fleet, controller, kube, namespace, e2e):
    sim_fleet.start("healthy.yaml", nodes=2, racks=1)
    controller.start()  # the fixture runs it with --waiting-for-nodes-seconds 20
    e2e.apply(kube, e2e.certification("nobody", namespace, [{"domain": "communication", "variant": "nccl-loopback"}],
                                      target={"nodeSelector": {"example.com/pool": "does-not-exist"}}))
    waiting = e2e.wait_for(
        lambda: (e2e.true_condition(kube.get(NVCRE_API_VERSION, "Certification", "nobody", namespace) or {}, "InProgress") or {}).get("reason") == "WaitingForNodes",
        60, "WaitingForNodes", controller.log_tail,
    )
    assert waiting
    cert = e2e.wait_terminal(kube, "Certification", "nobody", namespace, 120, controller)
    failed = e2e.true_condition(cert, "Failed")
    assert failed["reason"] == "WorkflowValidationFailed" and "No schedulable target nodes" in failed["message"]
    assert kube.list(NVCRE_API_VERSION, "Workflow", namespace) == []


def test_unknown_category_fails_before_anything_is_created(sim_fleet, controller, kube, namespace, e2e):
    sim_fleet.start("healthy.yaml", nodes=2, racks=1)
    controller.start()
    e2e.apply(kube, e2e.certification("unknown", namespace, [
        {"domain": "communication", "variant": "nccl-loopback"},
        {"domain": "communication", "variant": "nccl-no-such-test"},
    ]))
    cert = e2e.wait_terminal(kube, "Certification", "unknown", namespace, 60, controller)
    failed = e2e.true_condition(cert, "Failed")
    assert failed["reason"] == "CategoryNotFound"
    assert "communication/nccl-no-such-test" in failed["message"]
    assert kube.list(NVCRE_API_VERSION, "Workflow", namespace) == []
