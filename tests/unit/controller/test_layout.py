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
