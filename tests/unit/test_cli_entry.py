"""The CLI entry point turns usage errors into exit code 2 without a traceback."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nvcre.cli.main", *args], capture_output=True, text=True)


def test_version_prints_api_group():
    out = run("version")
    assert out.returncode == 0
    assert "nvcre.nvidia.com/v1alpha1" in out.stdout


def test_unknown_command_is_usage_error_without_traceback():
    out = run("no-such-command")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "no-such-command" in out.stderr
