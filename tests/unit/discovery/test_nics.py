from nvcre.discovery.nics import detect_nic_resource


def _node(allocatable):
    return {"metadata": {"name": "n"}, "status": {"allocatable": allocatable}}


def test_user_value_wins_everywhere():
    assert detect_nic_resource([], platform="aws", arch="h100", mlnx_per_node=8, user_value="rdma/x").resource_name == "rdma/x"


def test_only_onprem_gb_and_hgx_detect(nodes_of):
    together = nodes_of("nvcre-uat-togetherai-h100-kubevirt-nodes.yaml")
    assert detect_nic_resource(together, platform="togetherai", arch="h100", mlnx_per_node=8).resource_name is None
    nodes = [_node({"nvidia.com/mlnxnics": "8"})] * 2
    assert detect_nic_resource(nodes, platform="onprem", arch="h100", mlnx_per_node=8).resource_name is None
    assert detect_nic_resource(nodes, platform="onprem", arch="gb200", mlnx_per_node=8).resource_name == "nvidia.com/mlnxnics"


def test_zero_many_or_short_candidates_request_nothing_with_reason():
    none = detect_nic_resource([_node({"cpu": "4"})], platform="onprem", arch="gb300", mlnx_per_node=8)
    assert none.resource_name is None and "no RDMA NIC resource" in none.message
    many = detect_nic_resource([_node({"rdma/ib": "8", "rdma/roce": "8"})], platform="onprem", arch="b200", mlnx_per_node=8)
    assert many.resource_name is None and "rdma/ib, rdma/roce" in many.message
    short = detect_nic_resource([_node({"rdma/ib": "8"}), _node({"rdma/ib": "4"})], platform="onprem", arch="b300", mlnx_per_node=8)
    assert short.resource_name is None and "not at 8 per node" in short.message
    shared = detect_nic_resource([_node({"rdma/rdma_shared_device_a": "1k"})], platform="onprem", arch="gb200", mlnx_per_node=1)
    assert shared.resource_name == "rdma/rdma_shared_device_a"
