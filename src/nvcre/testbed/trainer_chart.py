"""The published Kubeflow Trainer Helm chart, assembled from Go module downloads.

`setup init` installs Trainer from its Helm chart; the tests need that very chart with no
internet. The Trainer module carries it (``charts/kubeflow-trainer``), but its subcharts
(JobSet, LeaderWorkerSet) are fetched by ``helm dependency build`` from
``oci://registry.k8s.io``, which a test machine cannot reach. Each subchart is also in
its own project's Go module (``sigs.k8s.io/jobset``, ``sigs.k8s.io/lws``, under
``charts/<name>``), so this takes all three from the Go module proxy, as the control
plane's binaries are, and vendors the subcharts into ``charts/`` as ``helm dependency
build`` would. A subchart whose source ``version`` differs from the one the Trainer
chart requires gets that version stamped in, as its project's release does.

Cached under ``<cache root>/trainer-chart-<version>/kubeflow-trainer`` (cache root as
for the binaries: $NVCRE_CACHE_DIR, else $XDG_CACHE_HOME/nvcre or ~/.cache/nvcre).
``python -m nvcre.testbed.trainer_chart [VERSION]`` prints the chart directory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from nvcre.errors import UserError
from nvcre.testbed.binaries import cache_root

TRAINER_MODULE = "github.com/kubeflow/trainer/v2"
CHART_NAME = "kubeflow-trainer"
# the Trainer chart's dependency repositories, and the Go module that holds each chart
SUBCHART_MODULES = {
    "oci://registry.k8s.io/jobset/charts": "sigs.k8s.io/jobset",
    "oci://registry.k8s.io/lws/charts": "sigs.k8s.io/lws",
}


class TrainerChartMissing(UserError):
    """The chart cannot be assembled here (no Go, or the module proxy did not answer)."""


def module_dir(module: str, version: str, timeout_s: float = 600) -> Path:
    """The module cache directory of module@version, downloaded through the Go proxy if needed."""
    if shutil.which("go") is None:
        raise TrainerChartMissing("go is not installed: the Kubeflow Trainer chart comes from the Go module proxy")
    with tempfile.TemporaryDirectory() as outside_any_module:
        done = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"], cwd=outside_any_module,
                              capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "GOFLAGS": "-mod=mod"})
    try:
        answer = json.loads(done.stdout or "{}")
    except ValueError:
        answer = {}
    if done.returncode != 0 or not answer.get("Dir"):
        detail = answer.get("Error") or done.stderr.strip()[-1000:]
        raise TrainerChartMissing(f"go mod download {module}@{version} failed: {detail}")
    return Path(answer["Dir"])


def trainer_chart(version: str = "v2.2.1") -> Path:
    """The Kubeflow Trainer chart of that module version with its subcharts vendored."""
    import yaml

    target = cache_root() / f"trainer-chart-{version}" / CHART_NAME
    stamp = target.parent / ".complete"
    if stamp.is_file() and (target / "Chart.yaml").is_file():
        return target
    source = module_dir(TRAINER_MODULE, version) / "charts" / CHART_NAME
    if not (source / "Chart.yaml").is_file():
        raise TrainerChartMissing(f"{TRAINER_MODULE}@{version} has no charts/{CHART_NAME}")
    stage = target.parent / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    shutil.copytree(source, stage / CHART_NAME)
    chart = stage / CHART_NAME
    notes = [f"{CHART_NAME}: {TRAINER_MODULE}@{version} charts/{CHART_NAME}"]
    for dep in (yaml.safe_load((chart / "Chart.yaml").read_text()) or {}).get("dependencies") or []:
        module = SUBCHART_MODULES.get(dep.get("repository", ""))
        if module is None:
            raise TrainerChartMissing(f"{CHART_NAME} {version}: no Go module known for subchart {dep.get('name')} "
                                      f"from {dep.get('repository')}")
        sub = module_dir(module, f"v{dep['version']}") / "charts" / dep["name"]
        if not (sub / "Chart.yaml").is_file():
            raise TrainerChartMissing(f"{module}@v{dep['version']} has no charts/{dep['name']}")
        shutil.copytree(sub, chart / "charts" / dep["name"])
        meta_file = chart / "charts" / dep["name"] / "Chart.yaml"
        meta_file.chmod(0o644)
        meta = yaml.safe_load(meta_file.read_text())
        note = f"charts/{dep['name']}: {module}@v{dep['version']} charts/{dep['name']}"
        if str(meta.get("version")) != str(dep["version"]):
            note += f" (version {meta.get('version')} stamped {dep['version']}, as its release does)"
            meta["version"] = str(dep["version"])
            meta_file.write_text(yaml.safe_dump(meta, sort_keys=False))
        notes.append(note)
    for path in [chart, *chart.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    (stage / "SOURCES").write_text("\n".join(notes) + "\n")
    shutil.rmtree(target.parent / CHART_NAME, ignore_errors=True)
    chart.rename(target)
    (stage / "SOURCES").rename(target.parent / "SOURCES")
    shutil.rmtree(stage, ignore_errors=True)
    stamp.write_text(f"version={version}\n")
    return target


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        print(trainer_chart(*args[:1]))
    except UserError as err:
        print(f"error: {err.message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
