"""The package as a user gets it: the built wheel alone, in fresh virtual environments
outside the checkout.

* the wheel carries the chart, py.typed, the license and honest metadata;
* installed with every dependency at its declared lower bound (constraints generated
  from pyproject.toml by hack/packaging/lowest.py), the CLI runs and the unit suite
  passes: the lower bounds are tested, not guessed;
* installed with today's dependencies, the README's install steps that need no
  cluster run as written, outside the checkout; `nvcrectl setup init` installs nvcre
  on the test bed from the chart inside the wheel, then again from an OCI registry
  (`--chart-ref`), with a chart pushed there from that same installation.

Needs the package index (pip) and, for setup init, the control plane.
"""

from __future__ import annotations

import email
import os
import secrets
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.packaging

REPO = Path(__file__).resolve().parents[2]
# The unit tests that exercise the dependencies: pydantic (api), kopf, kubernetes and
# prometheus-client (controller), typer and click (surface, completion, CLI), CEL
# (catalog, measure), rich and PyYAML (report, chart). Paths relative to the checkout.
DEPENDENCY_TESTS = [
    "tests/unit/api", "tests/unit/controller", "tests/unit/surface", "tests/unit/catalog", "tests/unit/measure",
    "tests/unit/report", "tests/unit/chart", "tests/unit/test_cli_entry.py", "tests/unit/test_completion.py",
]
CHECKOUT_ONLY = [
    # they read hack/ or src/ beside the installed package, which a wheel does not have
    "tests/unit/test_testbed_trainer.py::test_unbuilt_cache_says_make_trainer",
]


def _run(cmd, *, cwd=None, env=None, timeout=600, check=True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {result.returncode}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", out, REPO], cwd=REPO)
    (built,) = out.glob("nvcre-*.whl")
    return built


def _venv(where: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    return where / "bin"


def _clean_env(**extra: str) -> dict:
    """No PYTHONPATH or venv of ours leaking in: the fresh environment stands alone."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, **extra}


def test_wheel_contents(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = email.message_from_bytes(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))))
    assert "nvcre/_chart/Chart.yaml" in names and "nvcre/_chart/values.schema.json" in names
    shipped = len(list((REPO / "charts/nvcre/crds").glob("*.yaml")))
    assert sum(n.startswith("nvcre/_chart/crds/") for n in names) == shipped >= 10
    assert "nvcre/py.typed" in names and "nvcre/sim/scenarios/healthy.yaml" in names
    assert "nvcre/examples/certification.yaml" in names  # the README's walk-through starts from it
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert meta["License-Expression"] == "Apache-2.0"
    assert any(u.startswith("Source, ") for u in meta.get_all("Project-URL"))
    assert "Typing :: Typed" in meta.get_all("Classifier")
    requires = meta.get_all("Requires-Dist")
    mcp = [r for r in requires if r.startswith("mcp")]
    assert mcp and all("extra ==" in r for r in mcp), "mcp is an extra, not a dependency of every install"
    with zipfile.ZipFile(wheel) as z:
        entry = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "kubectl-nvcre" in entry and "kubectl_complete-nvcre" in entry


def test_lowest_allowed_versions(wheel, tmp_path):
    """Every dependency at its lower bound: pip check, the CLI, and the unit suite."""
    sys.path.insert(0, str(REPO / "hack" / "packaging"))
    try:
        from lowest import constraints
    finally:
        sys.path.pop(0)
    pins = tmp_path / "lowest.txt"
    pins.write_text(constraints())
    bin_dir = _venv(tmp_path / "venv")
    env = _clean_env()
    _run([bin_dir / "pip", "install", "-q", "--constraint", pins, wheel, "pytest", "pytest-timeout", "jsonschema", "hypothesis"], cwd=tmp_path, env=env)
    _run([bin_dir / "pip", "check"], cwd=tmp_path, env=env)
    frozen = _run([bin_dir / "pip", "freeze"], cwd=tmp_path, env=env).stdout.lower()
    for line in pins.read_text().splitlines():
        name, _, version = line.partition("==")
        assert any(f.startswith(name.lower().replace("_", "-") + "==") and f.split("==")[1].startswith(version) for f in frozen.replace("_", "-").splitlines()), line
    assert "nvcrectl" in _run([bin_dir / "nvcrectl", "version"], cwd=tmp_path, env=env).stdout
    rendered = _run([bin_dir / "nvcrectl", "certification", "render", REPO / "examples/demo-certification.yaml",
                     "--platform", "aws", "--gpu-arch", "h100", "--nodes", "16"], cwd=tmp_path, env=env).stdout
    assert "kind: Workflow" in rendered or "kind: Job" in rendered
    mcp = _run([bin_dir / "nvcrectl", "mcp", "serve"], cwd=tmp_path, env=env, check=False)
    assert mcp.returncode == 2 and "pip install 'nvcre[mcp]'" in mcp.stderr and "Traceback" not in mcp.stderr
    args = [bin_dir / "python", "-m", "pytest", *DEPENDENCY_TESTS, "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning"]
    for test in CHECKOUT_ONLY:
        args += ["--deselect", test]
    result = _run(args, cwd=REPO, env=env, check=False)
    assert result.returncode == 0, result.stdout[-6000:]
    # the suite ran against the installed wheel, not the checkout
    where = _run([bin_dir / "python", "-c", "import nvcre; print(nvcre.__file__)"], cwd=REPO, env=env).stdout
    assert str(tmp_path) in where


def test_mcp_extra_at_its_lower_bound(wheel, tmp_path):
    """The [mcp] extra at mcp's lowest allowed version imports what the server uses."""
    sys.path.insert(0, str(REPO / "hack" / "packaging"))
    try:
        from lowest import lower_bounds
    finally:
        sys.path.pop(0)
    bin_dir = _venv(tmp_path / "venv")
    env = _clean_env()
    low = lower_bounds(("mcp",))["mcp"]
    _run([bin_dir / "pip", "install", "-q", f"{wheel}[mcp]", f"mcp=={low}"], cwd=tmp_path, env=env)
    _run([bin_dir / "python", "-c", "import nvcre.mcp.server"], cwd=tmp_path, env=env)
    help_text = _run([bin_dir / "nvcrectl", "mcp", "serve", "--help"], cwd=tmp_path, env=env).stdout
    assert "stdio" in help_text


@pytest.fixture(scope="module")
def fresh_install(wheel, tmp_path_factory) -> Path:
    """The wheel in a new venv with today's dependencies, as `pip install nvcre` gives it."""
    root = tmp_path_factory.mktemp("fresh")
    bin_dir = _venv(root / "venv")
    _run([bin_dir / "pip", "install", "-q", wheel], cwd=root, env=_clean_env())
    return bin_dir


def readme_install_steps() -> list[str]:
    """The nvcrectl lines of the README's "On a real cluster" console block, comments cut."""
    text = (REPO / "README.md").read_text()
    block = text.split("## On a real cluster", 1)[1].split("```console", 1)[1].split("```", 1)[0]
    return [line.split("   #", 1)[0].split("  #", 1)[0].strip() for line in block.strip().splitlines()]


def test_readme_offline_steps_from_the_wheel_alone(fresh_install, tmp_path):
    """The README's install block, from the fresh venv in an empty directory: every command
    it names exists there, and the steps that need no cluster (the sample, the offline
    render) run exactly as written; `setup init` without helm says what is missing."""
    steps = readme_install_steps()
    assert steps[0] == "pip install nvcre" and any("certification example >" in s for s in steps)
    # no helm anywhere: not on PATH, not in $NVCRE_HELM, no test bed cache under $HOME
    env = {k: v for k, v in _clean_env().items() if k not in ("NVCRE_CACHE_DIR", "XDG_CACHE_HOME", "NVCRE_KUBE_BIN", "KUBEBUILDER_ASSETS")}
    env.update(PATH=str(fresh_install), NVCRE_HELM="", HOME=str(tmp_path))
    for step in steps[1:]:
        words = step.split()
        assert words[0] == "nvcrectl", step
        helped = _run([fresh_install / "nvcrectl", *words[1:3], "--help"], cwd=tmp_path, env=env, check=False)
        assert helped.returncode == 0, f"{step}: {helped.stderr}"
        if words[1:3] in (["certification", "example"], ["certification", "render"]):
            done = subprocess.run(step, shell=True, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
            assert done.returncode == 0 and "Traceback" not in done.stderr, f"{step}: {done.stderr}"
            if words[2] == "render":
                assert [d["kind"] for d in yaml.safe_load_all(done.stdout) if d].count("Job") == 3
    sample = yaml.safe_load((tmp_path / "certification.yaml").read_text())
    assert sample["kind"] == "Certification" and sample["metadata"]["name"] == "gpu-cluster-cert"
    no_helm = _run([fresh_install / "nvcrectl", "setup", "init", "-y"], cwd=tmp_path, env=env, check=False)
    assert no_helm.returncode == 2 and "helm not found" in no_helm.stderr and "Traceback" not in no_helm.stderr


def test_setup_init_from_the_wheel_alone(fresh_install, control_plane, kubeconfig, helm, kubectl, oci_registry, tmp_path):
    """`setup init` with nothing but the installed wheel: its own chart, then the same
    chart from an OCI registry (`--chart-ref`)."""
    env = _clean_env(KUBECONFIG=kubeconfig, NVCRE_HELM=str(control_plane.helm_path))
    ns = f"wheel-{secrets.token_hex(3)}"
    release = f"w{secrets.token_hex(3)}"
    # --skip-phases deps: this is about the nvcre chart; phase deps has its own test (test_setup_deps.py)
    common = ["-y", "-n", ns, "--release", release, "--skip-phases", "deps", "--set", "controller.replicas=0",
              "--set", "logProfiles.install=false"]
    try:
        first = _run([fresh_install / "nvcrectl", "setup", "init", *common], cwd=tmp_path, env=env, check=False)
        assert first.returncode == 0, first.stderr
        chart_line = next(line for line in first.stdout.splitlines() if line.strip().startswith("chart:"))
        assert "site-packages/nvcre/_chart" in chart_line and str(REPO) not in chart_line
        assert f"release {release} installed (revision 1)" in first.stdout
        status = _run([fresh_install / "nvcrectl", "setup", "status", "-n", ns, "--release", release], cwd=tmp_path, env=env, check=False)
        assert "✓ Helm release" in status.stdout and "✓ CRDs" in status.stdout, status.stdout

        # push the installed package's chart to the registry, then install from there
        site_chart = Path(chart_line.split("chart:", 1)[1].split(" (version")[0].strip())
        helm("package", site_chart, "-d", tmp_path)
        chart = yaml.safe_load((site_chart / "Chart.yaml").read_text())
        helm("push", tmp_path / f"nvcre-{chart['version']}.tgz", f"oci://{oci_registry}/wheel", "--plain-http")
        ref = f"oci://{oci_registry}/wheel/nvcre"
        second = _run([fresh_install / "nvcrectl", "setup", "init", *common, "--chart-ref", ref,
                       "--chart-version", chart["version"], "--plain-http"], cwd=tmp_path, env=env, check=False)
        assert second.returncode == 0, second.stderr
        assert ref in second.stdout and f"release {release} upgraded (revision 2)" in second.stdout
        bad = _run([fresh_install / "nvcrectl", "setup", "init", *common, "--chart-ref", "https://example.com/nvcre"],
                   cwd=tmp_path, env=env, check=False)
        assert bad.returncode == 2 and "expected an OCI chart reference" in bad.stderr
    finally:
        helm("uninstall", release, "-n", ns, check=False)
        kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false", check=False)
