"""dcgmi diag parser over the real fixtures plus failing tables/JSON in the tool's formats."""

from __future__ import annotations

import json

import pytest

from nvcre.measure.dcgm import dcgm_failure_reason, dcgm_failures, parse_dcgm

FAILING_TABLE_V3 = """+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 3.1.7                                          |
|-----  Deployment  --------+------------------------------------------------|
| Denylist                  | Pass                                           |
+-----  Hardware  ----------+------------------------------------------------+
| GPU Memory                | Pass - GPUs: 1, 2, 3                           |
|                           | Fail - GPU: 0                                  |
| Warning                   | GPU 0 Error using CUDA API cudaDeviceGetByPCI  |
|                           | BusId Check DCGM and system logs for errors.   |
| Diagnostic                | Pass - All                                     |
+-----  Stress  ------------+------------------------------------------------+
| Memory Bandwidth          | Fail - GPU: 2                                  |
| Warning                   | GPU 2 Memory bandwidth 800 GB/s below 1200     |
| Info                      | GPU 2 measured 800 GB/s                        |
+---------------------------+------------------------------------------------+
"""

FAILING_TABLE_V4 = """+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
|-----  Metadata  ----------+------------------------------------------------|
| DCGM Version              | 4.2.3                                          |
|-----  Deployment  --------+------------------------------------------------|
| software                  | Pass                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Pass                                     |
+-----  Hardware  ----------+------------------------------------------------+
| memory                    | Fail                                           |
|                           | GPU0: Pass                                     |
|                           | GPU1: Fail                                     |
| Warning: GPU1             | Pending page retirements detected; reset GPU.  |
+---------------------------+------------------------------------------------+
"""


def test_real_text_table_passes(fixtures_dir):
    report = parse_dcgm((fixtures_dir / "dcgm" / "dcgmi-diag-r3-v100x16-dcgm335-pass.txt").read_text())
    assert report.format == "text" and report.passed is True
    assert report.metadata["DCGM Version"] == "3.3.5"
    assert report.metadata["Driver Version Detected"] == "535.161.08"
    assert len(report.results) == 16
    eud = next(r for r in report.results if r.test == "EUD Test")
    assert eud.status == "Skip" and eud.category == "Stress"
    assert next(r for r in report.results if r.test == "PCIe").category == "Integration"
    assert dcgm_failures(report) == [] and dcgm_failure_reason(report) is None


@pytest.mark.parametrize("name,tests", [("virtualclient-dcgmi-diag-r2-1gpu-pass.json", 11),
                                        ("virtualclient-dcgmi-diag-r3-1gpu-pass.json", 16)])
def test_real_json_passes(fixtures_dir, name, tests):
    report = parse_dcgm((fixtures_dir / "dcgm" / name).read_text())
    assert report.format == "json" and report.passed is True and len(report.results) == tests
    assert next(r for r in report.results if r.test == "GPU Memory").gpus == [0]
    assert next(r for r in report.results if r.test == "Denylist").gpus is None


def test_malformed_json_failure_maps_to_test(fixtures_dir):
    report = parse_dcgm((fixtures_dir / "dcgm" / "virtualclient-dcgmi-diag-fail-cuda-lib-malformed.json").read_text())
    assert report.passed is False and report.failed_tests == ["CUDA Main Library"]
    (failure,) = dcgm_failures(report, node="gpu-node-03")
    assert failure["gpu"] is None and failure["node"] == "gpu-node-03"
    assert "libcuda.so" in failure["message"]
    assert dcgm_failure_reason(report).startswith("CUDA Main Library failed on node: Cannot open library")


def test_failing_v3_table_maps_gpus_and_messages():
    report = parse_dcgm(FAILING_TABLE_V3)
    assert report.passed is False
    failures = dcgm_failures(report)
    assert [(f["gpu"], f["test"]) for f in failures] == [(0, "GPU Memory"), (2, "Memory Bandwidth")]
    assert failures[0]["message"] == (
        "GPU 0 Error using CUDA API cudaDeviceGetByPCI BusId Check DCGM and system logs for errors."
    )
    passed = [r for r in report.results if r.test == "GPU Memory" and r.status == "Pass"]
    assert passed[0].gpus == [1, 2, 3]
    bandwidth = next(r for r in report.results if r.test == "Memory Bandwidth")
    assert bandwidth.info == ["GPU 2 measured 800 GB/s"]


def test_failing_v4_table_with_per_gpu_rows_and_k8s_prefixes():
    log = "\n".join(f"2026-11-30T07:00:00.000000000Z {line}" for line in FAILING_TABLE_V4.splitlines())
    report = parse_dcgm("Successfully ran diagnostic for group.\n" + log)
    assert report.metadata["DCGM Version"] == "4.2.3"
    assert [(r.test, r.status, r.gpus) for r in report.results] == [
        ("software", "Pass", [0]), ("software", "Pass", [1]), ("memory", "Pass", [0]), ("memory", "Fail", [1])]
    assert dcgm_failures(report) == [{"gpu": 1, "test": "memory", "message": "Pending page retirements detected; reset GPU."}]


def test_dcgm4_json_entities_and_warning_objects():
    data = {
        "DCGM Diagnostic": {
            "test_categories": [
                {"category": "Hardware", "tests": [
                    {"name": "memory", "results": [
                        {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"},
                        {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 3, "status": "Fail",
                         "warnings": [{"error_category": 1, "error_id": 83, "warning": "GPU 3 had uncorrectable memory errors"}],
                         "info": ["allocated 97%"]},
                    ]},
                ]},
            ]
        },
        "metadata": {"DCGM Version": "4.1.1", "Driver Version Detected": "570.86"},
    }
    report = parse_dcgm("+ dcgmi diag -r 4 -j\n" + json.dumps(data, indent=2))
    assert report.format == "json" and report.metadata["DCGM Version"] == "4.1.1"
    assert dcgm_failures(report) == [{"gpu": 3, "test": "memory", "message": "GPU 3 had uncorrectable memory errors"}]


def test_cut_and_garbled_output_never_raises(fixtures_dir):
    for name in ("dcgmi-diag-r3-v100x16-dcgm335-pass.txt", "virtualclient-dcgmi-diag-r3-1gpu-pass.json"):
        text = (fixtures_dir / "dcgm" / name).read_text()
        for cut in range(0, len(text), 53):
            report = parse_dcgm(text[:cut])
            assert report.passed in (True, None)
    half = FAILING_TABLE_V3[: FAILING_TABLE_V3.index("| Diagnostic                | Pass")]
    assert parse_dcgm(half).passed is False
    empty = parse_dcgm("\x00garbage\n| broken | row")
    assert empty.passed is None and empty.warnings
    assert parse_dcgm('{"DCGM GPU Diagnostic": {"test_categories": [{"tests": [{"results": [{"status": "Odd"}]}]}]}').warnings
