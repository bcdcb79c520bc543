"""A comment or document that points at a test names one that exists (file, and function
when it says ``::name``): such pointers are how a reader finds the proof of a claim, and
two of them had gone stale (pyproject.toml, hack/chart-readme.py)."""

from __future__ import annotations

import ast
import re
import subprocess

REF = re.compile(r"\btests/[A-Za-z0-9_/]+\.py(?:::[A-Za-z0-9_]+)?")
WHERE = ("pyproject.toml", "Makefile", "README.md", "hack", "src", "docs", "bench", "charts", ".ci")
TEXT_SUFFIXES = (".py", ".md", ".toml", ".yaml", ".yml", ".json", ".txt", ".sh", "")


def _files(repo_root) -> list:
    listed = subprocess.run(["git", "-C", str(repo_root), "ls-files", "--", *WHERE], capture_output=True, text=True, check=True).stdout
    return [repo_root / p for p in listed.splitlines() if (repo_root / p).suffix in TEXT_SUFFIXES and (repo_root / p).is_file()]


def _defined(path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def test_every_test_named_in_the_repository_exists(repo_root):
    refs: dict[str, set[str]] = {}
    for path in _files(repo_root):
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for ref in REF.findall(text):
            refs.setdefault(ref, set()).add(str(path.relative_to(repo_root)))
    assert len(refs) >= 10, "the pattern finds the references it is for"
    stale = []
    for ref, where in sorted(refs.items()):
        file, _, name = ref.partition("::")
        target = repo_root / file
        if not target.is_file() or (name and name not in _defined(target)):
            stale.append(f"{ref} (named in {', '.join(sorted(where))})")
    assert not stale, "references to tests that do not exist:\n" + "\n".join(stale)
