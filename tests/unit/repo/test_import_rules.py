"""The import rules hold: no cycles, core packages never reach the cluster, only nvcre.kube
speaks to the Kubernetes client and urllib3. The contracts are in pyproject.toml
(``[tool.importlinter]``); a broken one fails here with import-linter's explanation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_import_contracts_are_kept():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert lint, "import-linter is a dev dependency: pip install -e '.[dev]'"
    result = subprocess.run([lint, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout and "Contracts: 6 kept" in result.stdout, result.stdout[-2000:]


def test_the_contracts_would_catch_a_cycle(tmp_path):
    """The acyclic contract is not vacuous: a package with a two-module cycle breaks it."""
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a").mkdir()
    (pkg / "a" / "__init__.py").write_text("from cyc.b import x\n")
    (pkg / "b").mkdir()
    (pkg / "b" / "__init__.py").write_text("x = 1\ndef f():\n    from cyc.a import y\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_packages = ["cyc"]\n\n[[tool.importlinter.contracts]]\n'
        'name = "acyclic"\ntype = "acyclic_siblings"\nancestors = ["cyc"]\n'
    )
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    result = subprocess.run([lint, "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)})
    assert result.returncode != 0 and "BROKEN" in result.stdout, result.stdout + result.stderr
