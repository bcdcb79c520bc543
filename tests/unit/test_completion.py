"""Shell completion: the bash/zsh/fish scripts complete real commands when the shell
calls nvcrectl back, and `kubectl nvcre` completes through kubectl_complete-nvcre."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env={**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", **(env or {})})


def test_bash_script_completes_subcommands():
    script = _run(str(BIN / "nvcrectl"), "completion", "bash")
    assert script.returncode == 0 and "complete " in script.stdout and "_NVCRECTL_COMPLETE" in script.stdout
    probe = script.stdout + '\nCOMP_WORDS=(nvcrectl certification r); COMP_CWORD=2; _nvcrectl_completion nvcrectl; printf "%s\\n" "${COMPREPLY[@]}"\n'
    out = _run("bash", "-c", probe)
    assert out.returncode == 0, out.stderr
    assert set(out.stdout.split()) == {"render", "report", "run"}


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts(shell):
    out = _run(str(BIN / "nvcrectl"), "completion", shell)
    assert out.returncode == 0 and "_NVCRECTL_COMPLETE=complete_" + shell in out.stdout
    if shutil.which(shell):  # parse it with the real shell when there is one
        assert _run(shell, "-n", "-c", out.stdout).returncode == 0


def test_unknown_shell_is_a_usage_error():
    out = _run(str(BIN / "nvcrectl"), "completion", "tcsh")
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_kubectl_plugin_completion():
    out = _run(str(BIN / "kubectl_complete-nvcre"), "setup", "")
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert lines[-1] == ":4" and {"init", "status", "reset"} <= set(lines[:-1])
