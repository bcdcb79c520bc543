"""The CLI contract that needs no cluster: formats, exit codes, error lines, --version."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nvcre.cli.connection import Target, cluster_error_message
from nvcre.cli.output import EXIT_CODE_TABLE, format_table
from nvcre.errors import EXIT_CLUSTER, EXIT_FAILED, EXIT_NOT_JUDGED, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE
from nvcre.report.render import RESULT_EXIT

REPO = Path(__file__).resolve().parents[3]


def nvcrectl(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "nvcre.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def test_exit_code_table_is_the_documented_one():
    assert [c for c, _ in EXIT_CODE_TABLE] == [EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CLUSTER, EXIT_NOT_JUDGED, EXIT_TIMEOUT]
    assert RESULT_EXIT == {"PASSED": 0, "FAILED": 1, "INCOMPLETE": 4, "RUNNING": 4, "NOT JUDGED": 4}
    guide = (REPO / "docs" / "user-guide.md").read_text()
    for code, _ in EXIT_CODE_TABLE:
        assert f"| {code} |" in guide, f"docs/user-guide.md lacks exit code {code}"
    assert "Exit codes:" in nvcrectl("--help").stdout


def test_version_flag_and_json():
    flag = nvcrectl("--version")
    assert flag.returncode == 0 and flag.stdout.startswith("nvcrectl ")
    doc = json.loads(nvcrectl("version", "-o", "json").stdout)
    assert doc["apiVersion"] == "nvcre.nvidia.com/v1alpha1" and doc["version"]


@pytest.mark.parametrize("fmt, parse", [("json", json.loads), ("yaml", yaml.safe_load)])
def test_list_categories_documents_parse(fmt, parse):
    out = nvcrectl("certification", "list-categories", "-o", fmt)
    assert out.returncode == 0 and out.stderr == ""
    doc = parse(out.stdout)
    assert any(c["category"] == "communication/nccl-all-reduce" for c in doc["categories"])


def test_list_categories_names_and_80_columns():
    names = nvcrectl("certification", "list-categories", "-o", "name").stdout.split()
    assert "communication/nccl-all-reduce" in names and all("/" in n for n in names)
    table = nvcrectl("certification", "list-categories", env={"COLUMNS": "80"}).stdout
    assert all(len(line) <= 80 for line in table.splitlines()), max(table.splitlines(), key=len)
    for name in names:  # every identifier whole on one line: it is what --category takes
        assert any(line.startswith(name + " ") for line in table.splitlines()), name
    wide = nvcrectl("certification", "list-categories", "-o", "wide").stdout
    assert "MEASUREMENT" in wide and "THRESHOLDS" in wide


def test_unknown_list_format_is_usage():
    out = nvcrectl("certification", "list-categories", "-o", "xml")
    assert out.returncode == 2 and "table, wide, json, yaml, name" in out.stderr and "Traceback" not in out.stderr


def _kubeconfig(tmp_path: Path, server: str, token: str = "abc") -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "lab", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "lab",
    }))
    return path


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_is_exit_3_with_where(tmp_path):
    server = f"https://127.0.0.1:{_closed_port()}"
    kc = _kubeconfig(tmp_path, server)
    for args in (("certification", "report", "x"), ("cluster", "info", "-o", "json"), ("setup", "status")):
        out = nvcrectl(*args, "--kubeconfig", str(kc))
        assert out.returncode == EXIT_CLUSTER, (args, out.stderr)
        assert out.stdout == ""
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1, out.stderr
        assert server in lines[0] and "'lab'" in lines[0] and str(kc) in lines[0] and "connection refused" in lines[0]
        assert "urllib3" not in out.stderr and "Max retries" not in out.stderr and "Traceback" not in out.stderr


def test_missing_kubeconfig_is_exit_3(tmp_path):
    out = nvcrectl("certification", "report", "x", "--kubeconfig", str(tmp_path / "none"))
    assert out.returncode == EXIT_CLUSTER and "does not exist" in out.stderr


def test_api_refusals_read_as_one_line():
    from nvcre.kube.client import ApiError

    where = Target(kubeconfig="/k", context="lab", server="https://s:6443", user="me")
    text = cluster_error_message(ApiError(401, "Unauthorized", "Unauthorized"), where)
    assert "401 Unauthorized" in text and "https://s:6443" in text and "'lab'" in text and "\n" not in text
    text = cluster_error_message(ApiError(403, "Forbidden", "certifications is forbidden"), where)
    assert "lacks that permission" in text


def test_report_formats_without_wait_are_usage(tmp_path):
    out = nvcrectl("certification", "run", "-c", "communication/nccl-all-reduce", "-o", "html",
                   "--kubeconfig", str(tmp_path / "none"))
    assert out.returncode == EXIT_USAGE and "needs --wait" in out.stderr


def test_format_table_wraps_only_the_last_column():
    text = format_table(["A", "B"], [["key-one", "word " * 30]], width=40)
    lines = text.splitlines()
    assert all(len(l) <= 40 for l in lines) and lines[1].startswith("key-one  ")
    assert all(l.startswith(" " * 9) for l in lines[2:])
    assert len(format_table(["A", "B"], [["k", "word " * 30]], width=None).splitlines()) == 2
