"""Where setup init finds its chart: the installed package, a directory, a .tgz, an OCI ref."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from nvcre.cli import chart_source as cs
from nvcre.errors import UserError

CHART_CRDS = Path(__file__).resolve().parents[2] / "charts" / "nvcre" / "crds"


def test_checkout_chart_is_found_in_an_editable_install(repo_root):
    assert cs.default_chart() == (cs.packaged_chart() or repo_root / "charts/nvcre")


@pytest.mark.parametrize(
    "ref,chart,version,message",
    [
        ("https://example.com/nvcre", None, None, "expected an OCI chart reference"),
        ("oci://", None, None, "expected an OCI chart reference"),
        ("oci://reg/x y", None, None, "expected an OCI chart reference"),
        ("oci://ghcr.io/nvcre/charts/nvcre", "charts/nvcre", None, "cannot be combined"),
        (None, None, "0.1.0", "needs --chart-ref"),
        ("oci://ghcr.io/nvcre/charts/nvcre", None, "0.1.0; rm -rf", "expected a version"),
    ],
)
def test_bad_chart_refs_are_refused(ref, chart, version, message):
    with pytest.raises(UserError, match=message):
        cs.check_chart_ref(ref, chart, version)


def test_good_refs_pass():
    cs.check_chart_ref("oci://127.0.0.1:5000/charts/nvcre", None, "^0.1")
    cs.check_chart_ref("oci://ghcr.io/nvcre/charts/nvcre", None, None)


def test_archive_is_unpacked_and_directory_used(repo_root, tmp_path):
    archive = tmp_path / "nvcre-0.1.0.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(repo_root / "charts/nvcre", arcname="nvcre")
    with cs.local_chart(archive, None, None, pull=None) as path:
        assert (path / "Chart.yaml").is_file() and len(list((path / "crds").glob("*.yaml"))) == len(list(CHART_CRDS.glob("*.yaml")))
    assert not path.exists()  # the temporary copy is gone
    with cs.local_chart(repo_root / "charts/nvcre", None, None, pull=None) as path:
        assert path == repo_root / "charts/nvcre"


def test_oci_ref_is_pulled_with_helm(repo_root, tmp_path):
    calls = []

    def pull(*args):
        calls.append(args)
        untardir = args[args.index("--untardir") + 1]
        import shutil

        shutil.copytree(repo_root / "charts/nvcre", f"{untardir}/nvcre")

    with cs.local_chart(None, "oci://127.0.0.1:5000/charts/nvcre", "0.1.0", pull, plain_http=True) as path:
        assert (path / "Chart.yaml").is_file()
    assert calls[0][0] == "oci://127.0.0.1:5000/charts/nvcre"
    assert "--version" in calls[0] and "--plain-http" in calls[0] and "--untar" in calls[0]


@pytest.mark.parametrize("make", ["missing", "not-a-chart-dir", "not-an-archive"])
def test_bad_local_charts_are_refused(tmp_path, make):
    target = tmp_path / make
    if make == "not-a-chart-dir":
        target.mkdir()
    elif make == "not-an-archive":
        target.write_text("hello")
    with pytest.raises(UserError, match="--chart"):
        with cs.local_chart(target, None, None, pull=None):
            pass


@pytest.mark.parametrize("ref,version,message", [
    ("https://ghcr.io/kubeflow/charts/kubeflow-trainer", None, "expected oci://REGISTRY/REPO/kubeflow-trainer"),
    ("oci://", None, "expected an OCI chart reference"),
    ("oci://ghcr.io/kubeflow/charts/kubeflow-trainer", "2.2.1; rm -rf /", "--trainer-chart-version"),
    ("./kubeflow-trainer", "2.2.1", "needs an oci:// --trainer-chart-ref"),
])
def test_bad_trainer_chart_refs_are_refused(ref, version, message):
    with pytest.raises(UserError, match=message):
        cs.check_trainer_chart_ref(ref, version)


def test_trainer_chart_default_is_the_published_2_2_chart():
    cs.check_trainer_chart_ref(cs.DEFAULT_TRAINER_CHART_REF, None)
    assert cs.DEFAULT_TRAINER_CHART_REF == "oci://ghcr.io/kubeflow/charts/kubeflow-trainer"
    assert cs.DEFAULT_TRAINER_CHART_VERSION.startswith("2.2.")


def test_trainer_chart_pulls_the_pinned_version_or_reads_a_directory(repo_root, tmp_path):
    calls = []

    def pull(*args):
        calls.append(args)
        untardir = args[args.index("--untardir") + 1]
        import shutil

        shutil.copytree(repo_root / "charts/nvcre", f"{untardir}/kubeflow-trainer")

    with cs.trainer_chart("oci://127.0.0.1:5000/charts/kubeflow-trainer", None, pull, plain_http=True) as path:
        assert (path / "Chart.yaml").is_file()
    assert calls[0][calls[0].index("--version") + 1] == cs.DEFAULT_TRAINER_CHART_VERSION and "--plain-http" in calls[0]
    with cs.trainer_chart(str(repo_root / "charts/nvcre"), None, pull=None) as path:
        assert path == repo_root / "charts/nvcre"
    with pytest.raises(UserError, match=r"--trainer-chart-ref .*absent\.tgz: not found; pass the Kubeflow Trainer chart"):
        with cs.trainer_chart(str(tmp_path / "absent.tgz"), None, pull=None):
            pass
