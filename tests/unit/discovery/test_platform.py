import pytest

from nvcre.discovery.platform import check_platform, cluster_platform, node_platform
from nvcre.errors import UserError


@pytest.mark.parametrize(
    "fixture, platform",
    [
        ("nvcre-uat-aws-h100-p5-nodes.yaml", "aws"),
        ("nvcre-uat-aws-gb300-nodes.yaml", "aws"),
        ("nvcre-int-aws-a100-node-dcgm-level4-cert.yaml", "aws"),
        ("nvcre-uat-gcp-gb200-a4x-nodes.yaml", "gcp"),
        ("nvcre-int-gcp-rtxpro6000-nodes-and-cert.yaml", "gcp"),
        ("nvcre-int-azure-h100-nodes-and-cert.yaml", "azure"),
        ("nvcre-uat-togetherai-h100-kubevirt-nodes.yaml", "togetherai"),
    ],
)
def test_platform_of_real_nodes(nodes_of, fixture, platform):
    nodes = nodes_of(fixture)
    assert nodes
    assert {node_platform(n) for n in nodes} == {platform}
    assert cluster_platform(nodes) == platform


def _node(provider_id="", labels=None, name="n1"):
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"providerID": provider_id}}


@pytest.mark.parametrize(
    "provider_id, labels, platform",
    [
        ("ocid1.instance.oc1.iad.abc", {}, "oci"),
        ("nscale://instance/1234", {}, "nscale"),
        ("metal3://ns/host/uid", {}, "mistral"),
        ("openstack://region/uuid", {}, "onprem"),
        ("kind://docker/kind/kind-worker", {}, "onprem"),
        ("kubevirt://vm-1", {}, "onprem"),  # without the Together worker label
        ("", {"kubernetes.io/hostname": "forge-gpu-17"}, "forge"),
        ("", {"nke.nvidia.com/site-name": "site-a"}, "forge"),
        ("", {"kubernetes.io/hostname": "dgx-01"}, "onprem"),
        ("AWS://upper-case-is-not-aws", {}, "onprem"),
    ],
)
def test_provider_id_rules(provider_id, labels, platform):
    assert node_platform(_node(provider_id, labels)) == platform


def test_no_nodes_is_onprem_and_mixed_platforms_are_refused():
    assert cluster_platform([]) == "onprem"
    with pytest.raises(UserError, match=r"heterogeneous platforms detected: aws \(1\), gcp \(1\)"):
        cluster_platform([_node("aws:///a", name="a"), _node("gce://p/z/b", name="b")])


def test_check_platform_names_the_flag():
    assert check_platform("AWS") == "aws"
    with pytest.raises(UserError, match="--platform: unknown platform 'ibm'"):
        check_platform("ibm")
