"""Build hook: ship the Helm chart inside the package, so `pip install nvcre` is enough.

The chart lives in charts/nvcre (helm, the CRD generator and the tests use it there);
build_py copies it to nvcre/_chart in the build tree, which is what wheels contain.
An editable install skips the copy: nvcrectl finds the checkout's chart instead.
Everything else is declared in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CHART = Path(__file__).resolve().parent / "charts" / "nvcre"


class BuildWithChart(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (CHART / "Chart.yaml").is_file():
            raise SystemExit(f"error: {CHART}/Chart.yaml not found; the chart is part of every build")
        target = Path(self.build_lib) / "nvcre" / "_chart"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(CHART, target, ignore=shutil.ignore_patterns("*.tgz", ".helmignore~"))


setup(cmdclass={"build_py": BuildWithChart})
