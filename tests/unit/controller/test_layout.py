"""The controller's code stays in small pieces: no function over 60 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import nvcre.controller

LIMIT = 60


def test_no_controller_function_is_longer_than_60_lines():
    root = Path(nvcre.controller.__file__).parent
    long = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > LIMIT:
                    long.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, long


def test_no_nested_or_empty_dict_chains_in_controller_and_report():
    """``(x.get("a") or {}).get("b")`` chains are spelled ``dig(x, "a", "b")`` (nvcre.objpath):
    one reader of optional fields, so a null or a list at any level means "absent" everywhere."""
    import re

    import nvcre.report

    pattern = re.compile(r"or \{\}\)\.get\(")
    found = []
    for package in (nvcre.controller, nvcre.report):
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{package.__name__}/{path.relative_to(root)}:{number}")
    assert not found, found
