"""Where `setup init` gets its charts (nvcre's, and Kubeflow Trainer's for phase deps):
a directory, an archive or an OCI reference.

The wheel carries the chart (nvcre/_chart, copied in by the build), so an installed
nvcrectl needs nothing beside it; a source checkout uses its charts/nvcre. An archive
or an OCI chart (``oci://REGISTRY/REPO/nvcre``, pulled with helm) is unpacked into a
temporary directory, because the CRDs and default LogProfiles are read from its files.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from nvcre.errors import UserError

OCI_REF = re.compile(r"^oci://[A-Za-z0-9.\-]+(:[0-9]{1,5})?(/[A-Za-z0-9._\-]+)+$")
_VERSION = re.compile(r"^[0-9A-Za-z.+\-^~<>=*, |]{1,64}$")
# Kubeflow Trainer's published chart, at the version the reference installs (2.2.x)
DEFAULT_TRAINER_CHART_REF = "oci://ghcr.io/kubeflow/charts/kubeflow-trainer"
DEFAULT_TRAINER_CHART_VERSION = "2.2.1"


def packaged_chart() -> Path | None:
    """The chart inside the installed package (absent in an editable install)."""
    try:
        here = Path(str(resources.files("nvcre") / "_chart"))
    except (ModuleNotFoundError, TypeError):
        return None
    return here if (here / "Chart.yaml").is_file() else None


def checkout_chart() -> Path | None:
    """The chart of the source checkout nvcrectl runs from."""
    here = Path(__file__).resolve().parents[3] / "charts" / "nvcre"
    return here if (here / "Chart.yaml").is_file() else None


def default_chart() -> Path | None:
    return packaged_chart() or checkout_chart()


def check_chart_ref(ref: str | None, chart: Path | None, version: str | None) -> None:
    if ref is not None and chart is not None:
        raise UserError("--chart and --chart-ref cannot be combined: pass one chart")
    if ref is not None and not OCI_REF.match(ref):
        raise UserError(f"--chart-ref {ref!r}: expected an OCI chart reference like oci://ghcr.io/nvcre/charts/nvcre")
    if version is not None and ref is None:
        raise UserError("--chart-version needs --chart-ref (a local chart has one version)")
    if version is not None and not _VERSION.match(version):
        raise UserError(f"--chart-version {version!r}: expected a version or a semver range like 0.1.0 or ^0.1")


@contextmanager
def local_chart(
    chart: Path | None,
    ref: str | None,
    version: str | None,
    pull: Callable[..., object],
    plain_http: bool = False,
) -> Iterator[Path]:
    """A chart directory for the duration of the block; ``pull`` runs ``helm pull ARGS``."""
    if ref is not None:
        with tempfile.TemporaryDirectory(prefix="nvcre-chart-") as tmp:
            args = [ref, "--untar", "--untardir", tmp]
            if version:
                args += ["--version", version]
            if plain_http:
                args.append("--plain-http")
            pull(*args)
            yield _only_chart(Path(tmp), ref)
        return
    path = chart or default_chart()
    if path is None:
        raise UserError("--chart: no chart in this installation: pass --chart DIR|ARCHIVE or --chart-ref oci://...")
    with _chart_on_disk(Path(path), "--chart", "the nvcre chart") as found:
        yield found


@contextmanager
def _chart_on_disk(path: Path, flag: str, what: str) -> Iterator[Path]:
    """A chart directory as it is, or a .tgz archive unpacked for the block."""
    import tarfile
    if path.is_dir():
        if not (path / "Chart.yaml").is_file():
            raise UserError(f"{flag} {path}: not a chart (no Chart.yaml)")
        yield path
        return
    if not path.is_file():
        raise UserError(f"{flag} {path}: not found; pass {what}'s directory or .tgz archive")
    with tempfile.TemporaryDirectory(prefix="nvcre-chart-") as tmp:
        try:
            with tarfile.open(path) as archive:
                archive.extractall(tmp, filter="data")
        except (tarfile.TarError, OSError) as err:
            raise UserError(f"{flag} {path}: not a chart archive ({err})") from None
        yield _only_chart(Path(tmp), str(path))


def check_trainer_chart_ref(ref: str, version: str | None) -> None:
    """--trainer-chart-ref: an oci:// reference, or a local chart directory or .tgz."""
    if ref.startswith("oci://"):
        if not OCI_REF.match(ref):
            raise UserError(f"--trainer-chart-ref {ref!r}: expected an OCI chart reference like {DEFAULT_TRAINER_CHART_REF}")
        if version is not None and not _VERSION.match(version):
            raise UserError(f"--trainer-chart-version {version!r}: expected a version like {DEFAULT_TRAINER_CHART_VERSION}")
        return
    if re.match(r"^[a-z][a-z0-9+.\-]*://", ref):
        raise UserError(f"--trainer-chart-ref {ref!r}: expected oci://REGISTRY/REPO/kubeflow-trainer, "
                        "a chart directory or a .tgz archive")
    if version is not None:
        raise UserError("--trainer-chart-version needs an oci:// --trainer-chart-ref (a local chart has one version)")


@contextmanager
def trainer_chart(ref: str, version: str | None, pull: Callable[..., object], plain_http: bool = False) -> Iterator[Path]:
    """The Kubeflow Trainer chart for the block: pulled (``version`` defaults to the pinned
    2.2.x) or read from a directory or archive."""
    if ref.startswith("oci://"):
        with local_chart(None, ref, version or DEFAULT_TRAINER_CHART_VERSION, pull, plain_http) as path:
            yield path
        return
    with _chart_on_disk(Path(ref).expanduser(), "--trainer-chart-ref", "the Kubeflow Trainer chart") as path:
        yield path


def _only_chart(root: Path, what: str) -> Path:
    found = [p.parent for p in root.glob("*/Chart.yaml")]
    if len(found) != 1:
        raise UserError(f"{what}: expected one chart, found {len(found)}")
    return found[0]
