"""nccl-tests parser over the real fixtures and cut/garbled variants of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre.measure.nccl import (
    bandwidth_results,
    bandwidth_summary,
    failing_hosts,
    format_size,
    nccl_failure_reason,
    parse_nccl_log,
)


def _nccl_files(fixtures_dir: Path) -> list[Path]:
    root = fixtures_dir / "nccl"
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "expected.json")


def test_every_nccl_fixture_parses_with_rows(fixtures_dir):
    files = _nccl_files(fixtures_dir)
    assert len(files) >= 12
    for path in files:
        result = parse_nccl_log(path.read_text())
        assert result.rows, path.name
        summary = bandwidth_summary(result)
        assert summary["busBandwidthGBps"] is not None, path.name
        assert summary["peak"]["sizeBytes"] == max(r.size_bytes for r in result.rows)


def test_real_log_matches_expected_status_and_metrics(fixtures_dir):
    case = fixtures_dir / "nccl" / "nvcre-a100-allreduce-2node-real-log-with-expected"
    expected = json.loads((case / "expected.json").read_text())
    status = expected["BandwidthMeasurement/test-bw-real"]["status"]["results"]
    result = parse_nccl_log((case / "input_logs.txt").read_text())
    assert bandwidth_results(result) == status
    metrics = expected["bandwidthMetrics"]
    for row in bandwidth_results(result):
        assert float(row["busBW"]) == pytest.approx(metrics[f"cre_nccl_busbw_gbps:{row['sizeBytes']}"])
        assert float(row["algBW"]) == pytest.approx(metrics[f"cre_nccl_algbw_gbps:{row['sizeBytes']}"])
    assert result.transports == ["Socket"]
    assert result.test_name == "all_reduce_perf_mpi"
    assert result.params["iters"] == 2 and result.params["warmupIters"] == 1 and result.params["aggIters"] == 1


def test_two_node_debug_log_header_columns_and_summary(fixtures_dir):
    result = parse_nccl_log((fixtures_dir / "nccl" / "nvcre-a100-allreduce-2node-k8s-debug.log").read_text())
    assert len(result.rows) == 24
    assert result.tests_version == "2.17.8"
    assert result.nccl_version == "2.29.2+cuda13.1"
    assert result.params["maxBytes"] == 67108864 and result.params["nGpus"] == 1
    assert [d.rank for d in result.devices] == [0, 1]
    assert result.devices[1].host.endswith("node-0-1") and result.devices[0].name == "NVIDIA A100-PCIE-40GB"
    assert result.avg_bus_bandwidth == pytest.approx(0.0119653)
    assert result.out_of_bounds == 0 and result.out_of_bounds_ok is True
    assert result.concluded and not result.warnings
    last = result.rows[-1]
    assert last.size_bytes == 67108864 and last.count == 16777216
    assert (last.dtype, last.redop, last.root) == ("float", "sum", -1)
    assert last.out_of_place.time_us == 2649049 and last.out_of_place.wrong == 0
    assert last.in_place.time_us == 2684242 and last.in_place.bus_bw == pytest.approx(0.03)
    assert last.timestamp == "2026-08-06T14:11:42.931043300-07:00"
    assert result.transports == ["Socket"]
    assert result.collective == "all_reduce"


def test_loopback_two_cycles_count_as_samples_and_scientific_in_place(fixtures_dir):
    result = parse_nccl_log((fixtures_dir / "nccl" / "nvcre-a100-allreduce-loopback-1gpu-k8s-debug.log").read_text())
    assert len(result.rows) == 56
    stats = {s.size_bytes: s for s in result.size_stats()}
    assert len(stats) == 28 and all(s.samples == 2 for s in stats.values())
    assert stats[1073741824].alg_bw == pytest.approx((688.75 + 688.95) / 2)
    assert stats[1073741824].in_place_alg_bw == pytest.approx(6e6)
    summary = bandwidth_summary(result)
    assert summary["busBandwidthGBps"] == 0.0
    assert summary["algBandwidthGBps"] == pytest.approx(688.85)
    assert result.avg_bus_bandwidth == 0.0


def test_json_report(fixtures_dir):
    result = parse_nccl_log((fixtures_dir / "nccl" / "azure-nd96isr-h100-8gpu-allreduce-nccltests-json-J.json").read_text())
    assert result.format == "json"
    assert result.test_name == "all_reduce_perf" and result.collective == "all_reduce"
    assert result.nccl_version == "2.23.4"
    assert result.ranks == 8 and result.hosts == ["nccl-json"]
    (row,) = result.rows
    assert row.size_bytes == 17179869184 and row.root == -1 and row.out_of_place.wrong == 0
    assert row.in_place.bus_bw == pytest.approx(479.686103)
    summary = bandwidth_summary(result)
    assert summary["busBandwidthGBps"] == 480.9 and summary["peak"]["size"] == "16 GB"
    assert result.avg_bus_bandwidth == pytest.approx(480.294297)
    assert nccl_failure_reason(result) is None


@pytest.mark.parametrize(
    "name,redop,root,rows,sizes,peak_bus",
    [
        ("superbench-allreduce-8xa100-old-format.log", "sum", None, 34, 33, 235.26),
        ("superbench-alltoall-8xa100-old-format.log", None, None, 34, 30, 224.31),
        ("superbench-reducescatter-8xa100-old-format.log", "sum", None, 34, 30, 231.52),
        ("superbench-allgather-8xa100-oldest-format-no-redop.log", None, None, 34, 30, 223.39),
    ],
)
def test_old_formats(fixtures_dir, name, redop, root, rows, sizes, peak_bus):
    result = parse_nccl_log((fixtures_dir / "nccl" / name).read_text())
    assert len(result.rows) == rows
    assert len(result.size_stats()) == sizes
    assert result.rows[-1].redop == redop and result.rows[-1].root == root
    assert result.rows[-1].out_of_place.wrong is None  # N/A: validation off
    assert result.rows[0].size_bytes == 0
    assert bandwidth_summary(result)["peak"]["busBwGBps"] == peak_bus
    assert result.params["nGpus"] == 8 and result.ranks == 8


def test_gcp_markdown_preamble_gives_test_name(fixtures_dir):
    result = parse_nccl_log((fixtures_dir / "nccl" / "gcp-a3mega-h100-allreduce-2node-16gpu.txt").read_text())
    assert result.test_name == "all_reduce_perf"
    assert len(result.rows) == 31 and result.ranks == 16 and len(result.hosts) == 2
    assert bandwidth_summary(result)["busBandwidthGBps"] == 338.82
    assert result.avg_bus_bandwidth == pytest.approx(70.742)


def test_mixed_timestamps_and_crafted_files(fixtures_dir):
    mixed = parse_nccl_log((fixtures_dir / "nccl" / "nvcre-mixed-timestamps-and-raw-lines.txt").read_text())
    assert [r.size_bytes for r in mixed.rows] == [8, 65536, 8589934592, 17179869184]
    assert mixed.rows[-1].timestamp is None and mixed.rows[0].timestamp is not None
    assert bandwidth_summary(mixed)["busBandwidthGBps"] == 922.94
    only = parse_nccl_log((fixtures_dir / "nccl" / "nvcre-k8s-timestamped-out-of-place-only-rows.txt").read_text())
    assert len(only.rows) == 5 and all(r.in_place is None and r.root == -1 for r in only.rows)
    nosum = parse_nccl_log((fixtures_dir / "nccl" / "nvcre-k8s-timestamped-no-summary.txt").read_text())
    assert len(nosum.rows) == 5 and not nosum.concluded
    assert any("summary" in w for w in nosum.warnings)


def test_truncated_at_every_line_never_crashes(fixtures_dir):
    text = (fixtures_dir / "nccl" / "nvcre-a100-allreduce-2node-k8s-debug.log").read_text()
    lines = text.splitlines(keepends=True)
    full = len(parse_nccl_log(text).rows)
    previous = 0
    for cut in range(0, len(lines) + 1, 3):
        result = parse_nccl_log("".join(lines[:cut]))
        assert previous <= len(result.rows) <= full
        previous = len(result.rows)


def test_cut_mid_row_keeps_complete_rows_and_warns(fixtures_dir):
    text = (fixtures_dir / "nccl" / "nvcre-a100-allreduce-2node-k8s-debug.log").read_text()
    marker = text.index("   67108864      16777216")
    cut = text[: marker + 40]  # inside the out-of-place group of the last row
    result = parse_nccl_log(cut)
    assert len(result.rows) == 23
    assert any("incomplete" in w for w in result.warnings)
    # Cut inside the in-place group: the out-of-place columns are still read.
    cut2 = text[: marker + 100]
    result2 = parse_nccl_log(cut2)
    assert len(result2.rows) == 24
    assert result2.rows[-1].out_of_place.alg_bw == pytest.approx(0.03)
    assert result2.rows[-1].in_place is None or result2.rows[-1].in_place.wrong is None


def test_garbled_bytes_and_interleaved_lines(fixtures_dir):
    text = (fixtures_dir / "nccl" / "gcp-a3mega-h100-allreduce-2node-16gpu.txt").read_text()
    lines = text.splitlines()
    # An INFO line glued into a row, binary junk, and a duplicated half line.
    index = next(i for i, line in enumerate(lines) if line.strip().startswith("1048576 "))
    lines[index] = lines[index][: lines[index].index("207.2")] + "host-a:1:1 [0] NCCL INFO Channel 00 via NET/IB/0"
    lines.insert(index + 1, "\x00\x01\x02 garbage \ufffd\ufffd")
    lines.insert(index + 2, "          16             4")
    result = parse_nccl_log("\n".join(lines))
    assert len(result.rows) == 31
    glued = next(r for r in result.rows if r.size_bytes == 1048576)
    assert glued.out_of_place.bus_bw == pytest.approx(9.68) and glued.in_place is None
    assert any("partial" in w for w in result.warnings)
    assert any("incomplete" in w for w in result.warnings)  # the half line
    assert parse_nccl_log("").warnings == ["no nccl-tests data rows found"]
    assert parse_nccl_log("\x00" * 100 + "{not json").rows == []
    assert parse_nccl_log(b"           8             2     float     sum      -1   1.0    0.00    0.00       0".decode()).rows


def test_transport_detection_variants():
    base = "2026-01-01T00:00:00Z host-1:5:5 [0] NCCL INFO "
    ib = parse_nccl_log(base + "Using network IB\n" + base + "Using network IBext_v8\n")
    assert ib.transports == ["IB"]
    both = parse_nccl_log(base + "Using network Socket\n" + base + "Using network AWS Libfabric\n")
    assert both.transports == ["AWS Libfabric", "Socket"]
    via = parse_nccl_log(base + "Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n")
    assert via.transports == ["IB"]
    nothing = parse_nccl_log(base + "NET/IB : No device found.\n")
    assert nothing.transports == []


def test_failure_detection_names_hosts():
    log = "\n".join(
        [
            "2026-01-01T00:00:00Z gpu-node-12:77:77 [3] NCCL WARN Cuda failure 'unspecified launch failure'",
            "2026-01-01T00:00:01Z gpu-node-12: Test NCCL failure common.cu:1012 'unhandled cuda error'",
            "2026-01-01T00:00:02Z           8             2     float     sum      -1   1.00    0.00    0.00       3     1.00    0.00    0.00       0",
            "2026-01-01T00:00:03Z # Out of bounds values : 3 FAILED",
        ]
    )
    result = parse_nccl_log(log)
    reason = nccl_failure_reason(result)
    assert "Cuda failure" in reason and "unhandled cuda error" in reason and "#wrong" in reason
    assert failing_hosts(result) == ["gpu-node-12"]
    assert result.out_of_bounds == 3 and result.out_of_bounds_ok is False
    assert nccl_failure_reason(parse_nccl_log("# Out of bounds values : 0 OK")) is None


def test_format_size():
    assert format_size(8) == "8 B"
    assert format_size(1048576) == "1 MB"
    assert format_size(17179869184) == "16 GB"
    assert format_size(1536) == "1.5 KB"
    assert format_size(0) == "0 B"


def test_tag_output_prefix_and_json_inside_pod_log(fixtures_dir):
    tagged = parse_nccl_log("[1,0]<stdout>:           8             2     float     sum      -1   1.00    0.10    0.20       0\n")
    assert tagged.rows[0].out_of_place.bus_bw == 0.2
    body = (fixtures_dir / "nccl" / "azure-nd96isr-h100-8gpu-allreduce-nccltests-json-J.json").read_text()
    wrapped = "+ all_reduce_perf -J /out/r.json\n" + "\n".join(
        f"2026-09-17T15:53:15.000000000Z {line}" for line in body.splitlines()
    )
    result = parse_nccl_log(wrapped)
    assert result.format == "json" and result.rows[0].out_of_place.bus_bw == pytest.approx(480.902491)


def test_running_average_merge_and_metrics_from_status():
    from nvcre.measure.nccl import bandwidth_metrics_from_results, merge_bandwidth_results

    first = parse_nccl_log("           8             2     float     sum      -1   1.0    1.00    2.00       0\n")
    second = parse_nccl_log(
        "           8             2     float     sum      -1   1.0    3.00    4.00       0\n"
        "          16             4     float     sum      -1   1.0    5.00    6.00       0\n"
        "           8             2     float     sum      -1   1.0    3.00    4.00       0\n"
    )
    merged = merge_bandwidth_results(merge_bandwidth_results(None, first), second)
    assert merged == [
        {"sizeBytes": 8, "algBW": f"{(1 + 3 + 3) / 3:.2f}", "busBW": f"{(2 + 4 + 4) / 3:.2f}", "samples": 3},
        {"sizeBytes": 16, "algBW": "5.00", "busBW": "6.00", "samples": 1},
    ]
    assert bandwidth_metrics_from_results(merged) == {"busBandwidthGBps": 6.0, "algBandwidthGBps": 5.0}
    assert bandwidth_metrics_from_results([]) == {"busBandwidthGBps": None, "algBandwidthGBps": None}


def test_profile_driven_rows_for_other_tools():
    from nvcre.measure.logprofile import default_log_profile, load_log_profile
    from nvcre.measure.nccl import parse_bandwidth_log

    profile = load_log_profile({"metadata": {"name": "custom"}, "spec": {
        "timestamp": {"layout": "2006-01-02T15:04:05Z07:00"},
        "patterns": {
            "bandwidthResult": {"regex": r"msg=(?P<size>\d+) alg=(?P<algBW>[\d.]+) bus=(?P<busBW>[\d.]+)"},
            "networkTransport": {"regex": r"fabric: (?P<transport>\w+)"},
        }}})
    log = "2026-01-01T00:00:00Z fabric: RoCE\n2026-01-01T00:00:01Z msg=1024 alg=1.5 bus=2.5\nmsg=2048 alg=3 bus=4\n"
    result = parse_bandwidth_log(log, profile)
    assert [(r.size_bytes, r.out_of_place.bus_bw) for r in result.rows] == [(1024, 2.5), (2048, 4.0)]
    assert result.transports == ["RoCE"] and not result.warnings
    shipped = parse_bandwidth_log(
        "host:1:1 [0] NCCL INFO Using network IB\n"
        "           8             2     float     sum      -1   1.0    1.00    2.00       0\n",
        default_log_profile("nccl-bandwidth"),
    )
    assert shipped.transports == ["IB"] and len(shipped.rows) == 1
