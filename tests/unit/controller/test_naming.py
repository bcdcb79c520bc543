from nvcre.controller import naming as n


def test_fnv32a_known_vector():
    assert n.fnv32a("") == 0x811C9DC5
    assert n.fnv32a("a") == 0xE40C292C


def test_truncate_keeps_short_and_hashes_long():
    assert n.truncate("short", 31) == "short"
    long = "gpu-cluster-cert-communication-nccl-all-reduce"
    cut = n.truncate(long, 31)
    assert len(cut) <= 31
    assert cut.startswith("gpu-cluster-cert-communic-")
    assert cut == n.truncate(long, 31)  # deterministic
    assert n.truncate(long + "x", 31) != cut
    assert n.extract_hash(cut) == cut[-5:]


def test_truncate_strips_trailing_dash():
    name = "a" * 24 + "-" + "b" * 20
    cut = n.truncate(name, 31)
    assert "--" not in cut and len(cut) <= 31


def test_child_names():
    wf = n.workflow_name("cert", "communication", "nccl-all-reduce")
    assert len(wf) <= 31
    assert n.job_name(wf, "group-0", 1, single=True).endswith("-job")
    multi = n.job_name(wf, "group-3", 2, single=False)
    assert len(multi) <= 35
    assert n.job_name(wf, "group-3", 2, single=False) != n.job_name(wf, "group-4", 2, single=False)
    assert len(n.workload_name(multi)) <= 44
    assert n.workflow_name("c", "d", "v", {"testScale": "intra-node", "nodesPerJob": 2}) == "c-d-v-n2-intra-node"


def test_node_results_names():
    assert n.node_results_names("1234abcd-ffff") == ("succeeded-nodes-1234abcd", "failed-nodes-1234abcd")


def test_sibling_job_names_never_collide_at_4096_groups():
    wf = n.workflow_name("bench", "communication", "nccl-loopback", {"testScale": "intra-node"})
    names = {n.job_name(wf, f"group-{i}", it, single=False) for i in range(4096) for it in (1, 2)}
    assert len(names) == 8192
    assert all(len(x) <= n.MAX_JOB_NAME and not x.startswith("-") for x in names)
    diag = {n.job_name(wf, f"r{r}-{i}", 1, single=False) for r in range(1, 20) for i in range(300)}
    assert len(diag) == 19 * 300
