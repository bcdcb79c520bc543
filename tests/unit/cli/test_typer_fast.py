"""The short coercion path gives what Typer's own pydantic path gives, value for value.

Each case runs a small Typer app twice, through ``nvcre.cli.typer_fast`` and through
Typer's unpatched ``build_runtime_param``, and compares exit code, output and the
values the command received, so a short path that drifts from Typer fails here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pytest
import typer
from typer import _coercion, core
from typer.testing import CliRunner

from nvcre.cli import typer_fast

typer_fast.install()


def _app(seen: list) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def cmd(
        name: str = typer.Option("text", "--name"),
        count: int = typer.Option(3, "--count"),
        ratio: float = typer.Option(0.5, "--ratio"),
        flag: bool = typer.Option(False, "--flag"),
        maybe: Optional[str] = typer.Option(None, "--maybe"),
        path: Optional[Path] = typer.Option(None, "--path"),
        tags: list[str] = typer.Option([], "--tag"),
        ranged: int = typer.Option(1, "--ranged", min=1, max=9),
    ) -> None:
        seen.append((name, count, ratio, flag, maybe, path, tags, ranged))
        seen.append(tuple(type(v).__name__ for v in seen[-1]))

    return app


CASES = [
    [], ["--name", "x y"], ["--name", ""], ["--count", "007"], ["--count", "-5"], ["--count", "1_000"],
    ["--count", " 4"], ["--count", "+4"], ["--count", "abc"], ["--count", "٣"], ["--count", "1.0"],
    ["--count", "99999999999999999999999"], ["--ratio", "1.5"], ["--ratio", "2"], ["--ratio", "1e3"],
    ["--ratio", ".5"], ["--ratio", "nan"], ["--ratio", "x"], ["--flag"], ["--maybe", "m"], ["--path", "a/b.yaml"],
    ["--path", "."], ["--path", ""], ["--tag", "a", "--tag", "b"], ["--ranged", "5"], ["--ranged", "0"],
]


def _run(args: list[str]) -> tuple:
    seen: list = []
    result = CliRunner().invoke(_app(seen), args)
    return result.exit_code, result.output, repr(seen)  # repr: nan == nan


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a) or "defaults")
def test_short_path_matches_typers_own(args, monkeypatch):
    fast = _run(args)
    monkeypatch.setattr(core, "build_runtime_param", _coercion.build_runtime_param)
    assert _run(args) == fast


def test_install_patches_typer_once():
    assert getattr(core.build_runtime_param, "_nvcre_fast", False)
    before = core.build_runtime_param
    typer_fast.install()
    assert core.build_runtime_param is before


def test_plain_values_never_build_an_adapter(monkeypatch):
    typers_own = _coercion.build_runtime_param

    def refuse(descriptor):
        if descriptor.parameter_info.min is not None:  # bounds: Typer's own message, on purpose
            return typers_own(descriptor)
        raise AssertionError(f"built Typer's adapter for {descriptor.annotation}")

    monkeypatch.setattr(_coercion, "build_runtime_param", refuse)
    seen: list = []
    result = CliRunner().invoke(_app(seen), ["--name", "n", "--count", "2", "--ratio", "0.25", "--path", "p",
                                             "--tag", "t"])
    assert result.exit_code == 0, result.output
    assert seen[0] == ("n", 2, 0.25, False, None, Path("p"), ["t"], 1)
