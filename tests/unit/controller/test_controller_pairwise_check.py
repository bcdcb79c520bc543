"""Diagnose's per-pair bandwidth check in the controller: the planner's pairwise round becomes a
group whose Job runs the check, the Job's pair lines are named by node, and the planner gets them."""

from __future__ import annotations

from nvcre.controller.diagnose import _round_groups, policy_for
from nvcre.controller.measurements import Reading, pair_figures, with_pairs
from nvcre.planning.diagnose import Round

LOG = """# nvcre-pairwise: every pair of the hostfile's hosts runs /etc/mpi/hostfile timeout 3600 mpirun
2026-12-03T10:00:00.1Z # nvcre-pair w-worker-0.w.ns.svc w-worker-1.w.ns.svc busbw=381.2 rc=0
# nvcre-pair w-worker-0.w.ns.svc w-worker-2.w.ns.svc busbw=115.5 rc=0
# nvcre-pair w-worker-1.w.ns.svc w-worker-2.w.ns.svc busbw=- rc=3
# nvcre-pair w-worker-1.w.ns.svc w-worker-9.w.ns.svc busbw=380 rc=0
"""


def _pod(name, hostname, node):
    return {"metadata": {"name": name}, "spec": {"hostname": hostname, "nodeName": node}}


def test_pair_lines_are_named_by_the_node_each_worker_ran_on():
    pods = [_pod("w-worker-0-x1", "w-worker-0", "gpu-node-07"), _pod("w-worker-1-x2", "w-worker-1", "gpu-node-02"),
            _pod("w-worker-2-x3", "w-worker-2", "gpu-node-40"), {"metadata": {"name": "w-launcher-x"}, "spec": {}}]
    reading = with_pairs(Reading(job_fields={"busBandwidthGBps": 115.5}), LOG, pods)
    stored = reading.job_fields["pairs"]
    assert stored["nodes"] == ["gpu-node-07", "gpu-node-02", "gpu-node-40"]
    assert reading.job_fields["busBandwidthGBps"] == 115.5
    # a host no pod answers to (worker-9) cannot be named: left out, not guessed
    figures = pair_figures({"status": {"measurements": {"pairs": stored}}})
    assert figures == {("gpu-node-07", "gpu-node-02"): 381.2, ("gpu-node-07", "gpu-node-40"): 115.5,
                       ("gpu-node-02", "gpu-node-40"): None}
    assert with_pairs(Reading(), "no pair lines here", pods).job_fields == {}
    assert pair_figures({"status": {"measurements": {"busBandwidthGBps": 1.0}}}) is None


def test_the_planners_pairwise_round_is_a_pairwise_group_and_the_policy_follows_the_category():
    groups = _round_groups(Round(7, [["a", "b", "c"], ["d", "e"]], ["pairwise", "solo"]))
    assert groups[0]["check"] == "pairwise" and "check" not in groups[1]
    wf = {"metadata": {"name": "w"}, "spec": {"orchestration": {"diagnose": {}}}}
    assert policy_for(wf, pairwise=True).link_check == "pairwise"
    assert policy_for(wf).link_check == "search"
