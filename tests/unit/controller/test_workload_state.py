from nvcre.controller import workload_state as ws


def _bjob(name, cond=None, active=0, labels=None):
    st = {"active": active}
    if cond:
        st["conditions"] = [{"type": cond, "status": "True", "message": f"{cond} msg"}]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": labels or {}}, "status": st}


def _pod(name, phase="Running", node="n1", exit_code=None, reason=None, sched=None):
    pod = {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}, "status": {"phase": phase}}
    if exit_code is not None:
        pod["status"]["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": exit_code, "reason": reason or "Error"}}}]
    if sched:
        pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": sched, "message": "0/2 nodes are available"}]
    return pod


def test_launcher_decides_mpi_workload():
    objs = [_bjob("w-launcher", "Complete"), _bjob("w-worker", active=2)]
    assert ws.workload_phase(objs, []).phase == ws.SUCCEEDED
    objs = [_bjob("w-launcher", active=1), _bjob("w-worker", active=2)]
    assert ws.workload_phase(objs, [_pod("p")]).phase == ws.RUNNING
    objs = [_bjob("w-launcher", "Failed"), _bjob("w-worker", active=2)]
    assert ws.workload_phase(objs, []).phase == ws.FAILED
    assert ws.workload_phase([], []).phase == ws.ABSENT


def test_unschedulable_only_counts_unscheduled_unschedulable_pods():
    assert ws.unschedulable_message([_pod("a", "Pending", node=None, sched="Unschedulable")]) == "0/2 nodes are available"
    assert ws.unschedulable_message([_pod("a", "Pending", node=None, sched="SchedulingGated")]) is None
    assert ws.unschedulable_message([_pod("a", "Pending", node=None)]) is None


def test_failed_container_prefers_oom():
    pods = [_pod("a", "Failed", exit_code=1), _pod("b", "Failed", node="n2", exit_code=137, reason="OOMKilled")]
    f = ws.failed_container(pods)
    assert (f.pod, f.node, f.exit_code, f.reason) == ("b", "n2", 137, "OOMKilled")
    assert ws.failed_container([_pod("a")]) is None


def test_log_tail_keeps_end():
    text = "\n".join(f"line {i}" for i in range(2000))
    tail = ws.log_tail(text, lines=800, limit=100)
    assert tail.endswith("line 1999") and len(tail.encode()) <= 100


def _rank(name, index):
    pod = _pod(name)
    pod["metadata"]["annotations"] = {"batch.kubernetes.io/job-completion-index": str(index)}
    return pod


def test_multi_worker_profile_reads_first_and_last_rank():
    pods = [_rank("t-2", 2), _rank("t-0", 0), _rank("t-10", 10), _rank("t-1", 1)]
    multi = {"spec": {"workerStrategy": {"type": "Multi", "lifecyclePod": "first", "trainingStepPod": "last"}}}
    assert [p["metadata"]["name"] for p in ws.training_log_pods(pods, multi)] == ["t-0", "t-10"]
    single = {"spec": {"workerStrategy": {"type": "Single"}}}
    assert [p["metadata"]["name"] for p in ws.training_log_pods(pods, single)] == ["t-0"]
    assert [p["metadata"]["name"] for p in ws.training_log_pods([_rank("solo", 0)], multi)] == ["solo"]


def test_a_pod_seen_bound_counts_where_it_ran_after_it_is_gone():
    from nvcre.controller.workload_state import placement_record, pod_nodes, with_remembered

    def pod(name, node, gpus="8"):
        return {"metadata": {"name": name},
                "spec": {"nodeName": node, "containers": [{"resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}

    launcher = pod("launcher", "cpu-1", gpus="0")
    assert placement_record({"metadata": {"name": "p"}, "spec": {}}) is None  # not bound yet
    remembered = {p["metadata"]["name"]: placement_record(p) for p in (pod("r0", "n1"), pod("r1", "n2"), launcher)}
    # r1 was replaced (or evicted) before the controller looked: the list has r0 and the launcher only
    listed = [pod("r0", "n1"), launcher]
    assert pod_nodes(listed) == ["n1"]
    assert pod_nodes(with_remembered(listed, remembered)) == ["n1", "n2"]  # GPU ranks only, as before
    assert pod_nodes(with_remembered([], {})) == []


def test_log_pods_keep_the_sick_node_then_the_failed_ranks_within_the_cap():
    """A 16-rank group keeps 8 tails: ranks on the named nodes first, then ranks that exited
    non-zero, then the rest in rank order; never every rank 'first' (which orders nothing)."""
    pods = []
    for i in range(16):
        pod = _rank(f"w-{i}", i)
        pod["spec"] = {**pod.get("spec", {}), "nodeName": f"node-{i:02d}", "containers": [{"name": "rank"}]}
        code = 3 if i == 14 else 0
        pod["status"] = {"containerStatuses": [{"name": "rank", "state": {"terminated": {"exitCode": code}}}]}
        pods.append(pod)
    kept = [p["metadata"]["name"] for p in ws.log_pods(pods, 8, first={"node-12"})]
    assert kept[:2] == ["w-12", "w-14"] and kept[2:] == ["w-0", "w-1", "w-2", "w-3", "w-4", "w-5"]


def _ended_pod(policy, *codes, phase="Running"):
    """Containers terminated with ``codes``; the kubelet has not posted the pod's phase yet."""
    return {"metadata": {"name": "p"}, "spec": {"restartPolicy": policy} if policy else {},
            "status": {"phase": phase, "containerStatuses": [
                {"name": f"c{i}", "state": {"terminated": {"exitCode": code}}} for i, code in enumerate(codes)]}}


def test_a_pod_has_ended_once_its_containers_terminated_for_good():
    assert ws.pod_ended(_ended_pod("Never", 0)) == ws.SUCCEEDED
    assert ws.pod_ended(_ended_pod("Never", 0, 3)) == ws.FAILED
    assert ws.pod_ended(_ended_pod("OnFailure", 0)) == ws.SUCCEEDED
    assert ws.pod_ended(_ended_pod("OnFailure", 1)) is None  # the kubelet restarts it
    assert ws.pod_ended(_ended_pod(None, 0)) is None  # Always (the default): it restarts
    running = _ended_pod("Never", 0)
    running["status"]["containerStatuses"].append({"name": "side", "state": {"running": {}}})
    assert ws.pod_ended(running) is None
    assert ws.pod_ended(_ended_pod("Always", 0, phase="Failed")) == ws.FAILED  # the phase, once posted


def test_the_launcher_pods_end_decides_before_its_phase_is_posted():
    launcher = _bjob("w-launcher", active=1, labels={"nvcre.nvidia.com/role": "launcher"})
    launcher["spec"] = {"backoffLimit": 0}
    pod = _ended_pod("Never", 2)
    pod["metadata"]["labels"] = {"nvcre.nvidia.com/role": "launcher"}
    phase = ws.workload_phase([launcher, _bjob("w-worker", active=2)], [pod])
    assert phase.phase == ws.FAILED and "exit code 2" in phase.message
