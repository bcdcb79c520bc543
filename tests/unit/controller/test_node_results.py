"""The node-result ConfigMaps the reference's tools read: their exact encoding and who
counts as succeeded."""

from __future__ import annotations

import base64
import gzip
import json

from nvcre.controller import node_results as nr
from nvcre.planning.diagnose import start


def _cm(key, data: bytes) -> dict:
    return {"binaryData": {key: base64.b64encode(data).decode()}}


def test_failed_nodes_are_gzip_json_one_entry_per_name_and_reason_sorted():
    data = nr.encode_failed([
        {"name": "n2", "reason": "ThresholdViolation"},
        {"name": "n1", "reason": "WorkloadFailed", "message": "exit 2"},
        {"name": "n2", "reason": "ThresholdViolation", "message": "a later copy"},
        {"name": "n2", "reason": "HardwareFailureDetected", "message": "XID 79"},
        {"name": "", "reason": "WorkloadFailed"},
    ])
    rows = json.loads(gzip.decompress(data))
    assert rows == [
        {"name": "n1", "reason": "WorkloadFailed", "message": "exit 2"},
        {"name": "n2", "reason": "HardwareFailureDetected", "message": "XID 79"},
        {"name": "n2", "reason": "ThresholdViolation", "message": ""},
    ]
    assert nr.decode_failed(_cm(nr.FAILED_KEY, data)) == rows
    distinct = [{"name": "n2", "reason": "R2"}, {"name": "n1", "reason": "R1", "message": "m"}, {"name": "n3", "reason": "R1"}]
    assert nr.encode_failed(distinct) == nr.encode_failed(list(reversed(distinct)))  # input order does not matter
    assert nr.encode_failed([{"name": "a", "reason": "R"}]) == nr.encode_failed([{"name": "a", "reason": "R"}])  # no timestamp inside


def test_succeeded_nodes_are_a_sorted_deduplicated_csv():
    data = nr.encode_succeeded(["n3", "n1", "n3", ""])
    assert gzip.decompress(data) == b"n1,n3"
    assert nr.decode_succeeded(_cm(nr.SUCCEEDED_KEY, data)) == ["n1", "n3"]


def test_refs_follow_from_the_workflow_uid():
    succeeded, failed = nr.refs_for({"metadata": {"uid": "0a1b2c3d-4e5f-6789-abcd-ef0123456789"}})
    assert succeeded == {"apiGroup": "", "kind": "ConfigMap", "name": "succeeded-nodes-0a1b2c3d"}
    assert failed["name"] == "failed-nodes-0a1b2c3d" and failed["kind"] == "ConfigMap"


def test_succeeded_means_a_passing_group_or_a_diagnosis_and_not_named_failed():
    wf = {"status": {
        "orchestration": {"groups": [{"name": "g0", "nodes": ["a", "b"], "phase": "Succeeded"},
                                     {"name": "g1", "nodes": ["c", "d"], "phase": "Failed"},
                                     {"name": "g2", "nodes": ["e", "f"], "phase": "Failed"}],
                          "isolation": {"phase": "Succeeded", "nodes": ["c", "d"], "convicted": ["c"]}},
        "failedNodes": [{"name": "c", "reason": "ThresholdViolation"}, {"name": "e", "reason": "HardwareFailureDetected"}],
    }}
    # g2 crashed on e's fault: f was never measured; d was cleared by the isolation
    assert nr.succeeded_nodes(wf) == ["a", "b", "d"]
    wf["status"]["orchestration"]["isolation"]["phase"] = "Failed"  # inconclusive: nobody cleared
    assert nr.succeeded_nodes(wf) == ["a", "b"]
    unpinned = {"status": {"orchestration": {"groups": [{"name": "group-0", "phase": "Succeeded"}], "exercisedNodes": ["x", "y"]}}}
    assert nr.succeeded_nodes(unpinned) == ["x", "y"]
    unpinned["status"]["orchestration"]["groups"][0]["phase"] = "Failed"
    assert nr.succeeded_nodes(unpinned) == []
    diagnose = {"status": {
        "orchestration": {"groups": [], "diagnose": start([f"n{i}" for i in range(6)]).to_dict()},
        "failedNodes": [{"name": "n4", "reason": "ThresholdViolation"}],
    }}
    assert nr.succeeded_nodes(diagnose) == ["n0", "n1", "n2", "n3", "n5"]
