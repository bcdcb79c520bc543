"""Valid edge cases: the Python validation and the model of the API server both accept them.

The malformed files show both refuse the same things; these show neither refuses too much
(the cross-level Unpinned, env and label rules are where the two could disagree).
"""

from __future__ import annotations

import copy

import pytest

from nvcre.api import KINDS
from nvcre.api.crd import build_crd
from nvcre.api.load import parse_object

from .schema_sim import problems


def _cert(spec_extra: dict, categories: list[dict]) -> dict:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "edge"},
        "spec": {"target": {}, **spec_extra, "categories": categories},
    }


def _cat(**options) -> dict:
    cat = {"domain": "communication", "variant": "nccl-all-reduce"}
    if options:
        cat["options"] = options
    return cat


RUN_BASE = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1",
    "kind": "WorkloadRun",
    "metadata": {"name": "edge"},
    "spec": {"image": "img:1", "numNodes": 2, "framework": {"torch": {"module": "trainer.main", "args": ["--x"]}}},
}

VALID = {
    "unpinned-global-size-per-category": _cert({"placement": "Unpinned"}, [_cat(nodesPerJob=4), _cat(nodesPerJob=2)]),
    "unpinned-global-category-pinned": _cert({"placement": "Unpinned"}, [_cat(placement="Pinned")]),
    "unpinned-category-full-scale-over-global-intra-node": _cert(
        {"testScale": "intra-node"}, [_cat(placement="Unpinned", nodesPerJob=4, testScale="full-scale")]
    ),
    "unpinned-with-global-size": _cert({"nodesPerJob": 8}, [_cat(placement="Unpinned")]),
    "env-32-after-merge-with-overlap": _cert(
        {"env": [{"name": f"G{i}", "value": "1"} for i in range(20)]},
        [_cat(env=[{"name": "G0", "value": "2"}] + [{"name": f"C{i}", "value": "1"} for i in range(12)])],
    ),
    "labels-32-after-merge": _cert(
        {"workloadMetadata": {"labels": {f"g{i}": "a" for i in range(16)}}},
        [_cat(workloadMetadata={"labels": {f"c{i}": "b" for i in range(16)}})],
    ),
    "requests-equal-limits": _cert(
        {"resources": {"requests": {"cpu": "64", "memory": "500Gi"}, "limits": {"cpu": 64, "memory": "0.5Ti"}}},
        [{"domain": "training", "variant": "nemotron5-8b"}],
    ),
    "all-threshold-keys": _cert(
        {"thresholds": {"busBandwidthGBps": "value >= 900", "algBandwidthGBps": "value > 400.5",
                        "goodputRatio": "value >= 0.9", "avgTFLOPsPerGPU": "value >= 800",
                        "avgStepTimeSec": "value <= 12.0 && value > 0.0"}},
        [_cat()],
    ),
    "ssh-source-repo-and-label-with-prefix": _cert(
        {"sourceRepo": "ssh://git@git.example.com:2222/mirrors/Megatron-LM.git",
         "workloadMetadata": {"labels": {"kueue.x-k8s.io/queue-name": "q", "empty": ""}}},
        [{"domain": "training", "variant": "nemotron5-56b"}],
    ),
    "cordoned-opt-in-and-expressions": _cert(
        {},
        [_cat()],
    ),
    "run-torch-module": RUN_BASE,
    "run-unpinned-full-scale-with-resources": {
        **RUN_BASE,
        "spec": {**RUN_BASE["spec"], "orchestration": {"placement": "Unpinned", "testScale": "full-scale"},
                 "resources": {"requests": {"nvidia.com/gpu": 4, "cpu": "2"}, "limits": {"nvidia.com/gpu": 4}},
                 "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]},
    },
}
VALID["cordoned-opt-in-and-expressions"]["spec"]["target"] = {
    "nodeNames": ["gpu-node-1"],
    "taintSelectors": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
    "matchExpressions": [{"key": "nvidia.com/gpu.clique", "operator": "Exists"}],
}


@pytest.mark.parametrize("name", list(VALID))
def test_valid_edge_case_is_accepted_by_both(name: str):
    obj = copy.deepcopy(VALID[name])
    parse_object(obj)
    schema = build_crd(KINDS[obj["kind"]])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert problems(schema, obj) == []
