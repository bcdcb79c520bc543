from nvcre.discovery.nodes import capacity_filter, select_target_nodes, tolerations_for


def _node(name, labels=None, taints=None, unschedulable=False, gpus=None):
    node = {"metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true", **(labels or {})}},
            "spec": {"taints": taints or []}, "status": {"allocatable": {}}}
    if unschedulable:
        node["spec"]["unschedulable"] = True
    if gpus is not None:
        node["status"]["allocatable"]["nvidia.com/gpu"] = str(gpus)
    return node


def test_real_p5_nodes_all_selected_sorted(nodes_of):
    nodes = nodes_of("nvcre-uat-aws-h100-p5-nodes.yaml")
    sel = select_target_nodes(list(reversed(nodes)), {"nodeSelector": {"nvidia.com/gpu.present": "true"}})
    assert sel.names == sorted(n["metadata"]["name"] for n in nodes)
    assert sel.excluded == []


def test_cordoned_real_node_is_excluded_with_reason_unless_opted_in(nodes_of):
    nodes = nodes_of("nvcre-uat-aws-h100-cordoned-node.yaml")
    sel = select_target_nodes(nodes, {})
    assert sel.selected == []
    assert sel.excluded[0]["name"] == "aws-h100-cordoned-node-01"
    assert sel.excluded[0]["reason"] == "Cordoned"
    opted = select_target_nodes(nodes, {"taintSelectors": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]})
    assert opted.names == ["aws-h100-cordoned-node-01"]


def test_filters_and_gpu_present():
    nodes = [
        _node("a", {"rack": "1"}),
        _node("b", {"rack": "2"}),
        _node("c", {"rack": "1", "pool": "x"}),
        {"metadata": {"name": "cpu", "labels": {"rack": "1"}}, "spec": {}},
    ]
    assert select_target_nodes(nodes, {"nodeSelector": {"rack": "1"}}).names == ["a", "c"]
    assert select_target_nodes(nodes, {"matchExpressions": [{"key": "pool", "operator": "DoesNotExist"}]}).names == ["a", "b"]
    assert select_target_nodes(nodes, {"matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["1"]}]}).names == ["b"]
    assert select_target_nodes(nodes, {"matchExpressions": [{"key": "rack", "operator": "Gt", "values": ["0"]}]}).names == []
    assert select_target_nodes(nodes, {"nodeNames": ["c", "cpu", "zz"]}).names == ["c"]


def test_taint_selectors_are_anded_and_become_tolerations():
    tainted = _node("t", taints=[{"key": "burnin", "value": "yes", "effect": "NoSchedule"}, {"key": "gpu", "effect": "NoExecute"}])
    plain = _node("p")
    target = {"taintSelectors": [{"key": "burnin", "value": "yes"}, {"key": "gpu", "effect": "NoExecute"}]}
    assert select_target_nodes([tainted, plain], target).names == ["t"]
    assert select_target_nodes([tainted], {"taintSelectors": [{"key": "burnin", "value": "no"}]}).names == []
    assert tolerations_for(target) == [
        {"key": "burnin", "operator": "Equal", "value": "yes"},
        {"key": "gpu", "operator": "Exists", "effect": "NoExecute"},
    ]


def test_capacity_filter_drops_short_nodes_keeps_unknown(nodes_of):
    gb300 = nodes_of("nvcre-uat-aws-gb300-nodes.yaml")
    assert capacity_filter(gb300, 4).excluded == []
    short = capacity_filter(gb300, 8)
    assert short.selected == [] and {e["reason"] for e in short.excluded} == {"InsufficientGPUCapacity"}
    mixed = capacity_filter([_node("zero", gpus=0), _node("none"), _node("two", gpus=2)], 4)
    assert [n["metadata"]["name"] for n in mixed.selected] == ["zero", "none"]
    assert mixed.excluded[0]["message"] == "node has 2 allocatable nvidia.com/gpu; the job needs 4 per node"
