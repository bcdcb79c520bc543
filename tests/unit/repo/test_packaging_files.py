"""Packaging metadata that a build would not catch: globs that match, bounds that are
ranges, the image's pins inside them, the license text, the chart wired into the build."""

from __future__ import annotations

import importlib.util
import tomllib

from packaging.requirements import Requirement
from packaging.version import Version


def _pyproject(repo_root) -> dict:
    return tomllib.loads((repo_root / "pyproject.toml").read_text())


def test_every_package_data_glob_matches_files(repo_root):
    globs = _pyproject(repo_root)["tool"]["setuptools"]["package-data"]["nvcre"]
    for pattern in globs:
        assert list((repo_root / "src/nvcre").glob(pattern)), f"package-data glob {pattern!r} matches nothing"


def test_dependencies_have_lower_bounds_and_mcp_is_an_extra(repo_root):
    project = _pyproject(repo_root)["project"]
    for raw in project["dependencies"]:
        req = Requirement(raw)
        assert any(s.operator == ">=" for s in req.specifier), f"{raw}: no lower bound"
    names = {Requirement(r).name for r in project["dependencies"]}
    assert "mcp" not in names
    assert any(Requirement(r).name == "mcp" for r in project["optional-dependencies"]["mcp"])
    assert any(Requirement(r).name == "mcp" for r in project["optional-dependencies"]["dev"])  # tests still run
    requires = _pyproject(repo_root)["build-system"]["requires"]
    assert any(Requirement(r).name == "setuptools" and Version("77") in Requirement(r).specifier
               and Version("76.9") not in Requirement(r).specifier for r in requires), "the license field needs setuptools>=77"


def test_lowest_constraints_cover_every_dependency(repo_root):
    spec = importlib.util.spec_from_file_location("lowest", repo_root / "hack/packaging/lowest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    bounds = mod.lower_bounds()
    deps = [Requirement(r) for r in _pyproject(repo_root)["project"]["dependencies"]]
    assert set(bounds) == {d.name for d in deps}
    for dep in deps:
        assert Version(bounds[dep.name]) in dep.specifier, dep


def test_image_constraints_pin_every_dependency_inside_its_range(repo_root):
    pins = {}
    for line in (repo_root / "constraints/image.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[name.lower().replace("_", "-")] = Version(version)
    for raw in _pyproject(repo_root)["project"]["dependencies"]:
        req = Requirement(raw)
        key = req.name.lower().replace("_", "-")
        assert key in pins, f"constraints/image.txt does not pin {req.name}: run hack/packaging/lock.sh"
        assert pins[key] in req.specifier, f"constraints/image.txt pins {req.name} {pins[key]} outside {req.specifier}"
    docker = (repo_root / "Dockerfile").read_text()
    assert "--constraint constraints/image.txt" in docker and "COPY charts ./charts" in docker


def test_license_is_the_apache_2_text(repo_root):
    text = (repo_root / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text and len(text) > 10000
    assert _pyproject(repo_root)["project"]["license"] == "Apache-2.0"


def test_the_build_ships_the_chart(repo_root):
    setup = (repo_root / "setup.py").read_text()
    assert '"charts" / "nvcre"' in setup and '"_chart"' in setup
    assert "graft charts/nvcre" in (repo_root / "MANIFEST.in").read_text()
    assert (repo_root / "src/nvcre/py.typed").is_file()
