"""Find (or build) the pinned control-plane binaries the test bed runs.

The binaries are built by ``hack/kube/build.sh`` into a cache directory outside the
checkout, keyed by the versions pinned in ``hack/kube/versions.env``; a fresh clone
on the same machine finds them there instead of rebuilding. ``NVCRE_KUBE_BIN`` (or
``KUBEBUILDER_ASSETS``) points at a directory of binaries the user already has.

Command line: ``python -m nvcre.testbed.binaries build`` builds or reuses the set and
prints its directory; ``python -m nvcre.testbed.binaries path`` only looks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from nvcre.errors import UserError

REQUIRED = (
    "etcd",
    "kube-apiserver",
    "kube-scheduler",
    "kube-controller-manager",
    "kubectl",
    "helm",
)
ENV_VARS = ("NVCRE_KUBE_BIN", "KUBEBUILDER_ASSETS")
STAMP_NAME = ".complete"

#: hack/kube in the source checkout this package was installed from (editable install).
HACK_KUBE = Path(__file__).resolve().parents[3] / "hack" / "kube"


class BinariesMissing(UserError):
    """The control-plane binaries are not there and were not to be built."""


@dataclass(frozen=True)
class PinnedVersions:
    kubernetes: str
    etcd: str
    helm: str

    @property
    def set_name(self) -> str:
        return f"kube-{self.kubernetes}-etcd-{self.etcd}-helm-{self.helm}"


def pinned_versions(hack_dir: Path = HACK_KUBE) -> PinnedVersions:
    """Read the pins from ``hack/kube/versions.env`` (the one place they are written)."""
    env_file = hack_dir / "versions.env"
    if not env_file.is_file():
        raise BinariesMissing(
            f"{env_file} not found: this is not a source checkout, so the test-bed "
            f"binaries cannot be built here; set NVCRE_KUBE_BIN to a directory "
            f"holding {', '.join(REQUIRED)}"
        )
    values: dict[str, str] = {}
    for line in env_file.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    try:
        return PinnedVersions(
            kubernetes=values["KUBERNETES_VERSION"],
            etcd=values["ETCD_VERSION"],
            helm=values["HELM_VERSION"],
        )
    except KeyError as missing:
        raise BinariesMissing(f"{env_file}: {missing.args[0]} is not set") from None


def cache_root() -> Path:
    """Where built binary sets live; the same rule as hack/kube/build.sh."""
    explicit = os.environ.get("NVCRE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "nvcre"


def cached_bin_dir(versions: PinnedVersions | None = None) -> Path:
    """The bin directory of the pinned set (it may not exist yet)."""
    return cache_root() / (versions or pinned_versions()).set_name / "bin"


def missing_in(directory: Path) -> list[str]:
    """The required binaries that are absent or not executable in ``directory``."""
    return [b for b in REQUIRED if not os.access(directory / b, os.X_OK)]


def find_binaries() -> Path | None:
    """The directory of usable binaries, or None if they have to be built first.

    An explicit ``NVCRE_KUBE_BIN``/``KUBEBUILDER_ASSETS`` that lacks a binary is an
    error, not a fall-through: the user asked for that directory.
    """
    for var in ENV_VARS:
        value = os.environ.get(var)
        if value:
            directory = Path(value).expanduser()
            if not directory.is_dir():
                raise BinariesMissing(
                    f"{var}={directory} is not a directory; it must hold {', '.join(REQUIRED)}"
                )
            missing = missing_in(directory)
            if missing:
                raise BinariesMissing(
                    f"{var}={directory} lacks {', '.join(missing)}; it must hold "
                    f"{', '.join(REQUIRED)}"
                )
            return directory
    directory = cached_bin_dir()
    if (directory.parent / STAMP_NAME).is_file() and not missing_in(directory):
        return directory
    return None


def build(hack_dir: Path = HACK_KUBE) -> Path:
    """Run hack/kube/build.sh (which reuses a finished set) and return the bin dir."""
    script = hack_dir / "build.sh"
    if not script.is_file():
        raise BinariesMissing(f"{script} not found; set NVCRE_KUBE_BIN instead")
    result = subprocess.run(
        ["bash", str(script)], stdout=subprocess.PIPE, text=True, check=False
    )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise BinariesMissing(
            f"building the test-bed binaries failed (exit {result.returncode}); "
            f"see the output above, or set NVCRE_KUBE_BIN to existing binaries"
        )
    return Path(lines[-1])


def ensure_binaries(*, build_if_missing: bool = False) -> Path:
    """The bin directory holding every required binary.

    Raises :class:`BinariesMissing` with the commands that fix it when they are not
    there and ``build_if_missing`` is false (tests must fail, not silently skip).
    """
    found = find_binaries()
    if found is not None:
        return found
    if build_if_missing:
        return build()
    try:
        expected = str(cached_bin_dir())
    except BinariesMissing:
        expected = "the cache directory"
    raise BinariesMissing(
        "the Kubernetes test-bed binaries (" + ", ".join(REQUIRED) + ") are not built: "
        f"run `make kube` (builds them once into {expected}, about 10 minutes cold on "
        "2 cores) or set NVCRE_KUBE_BIN to a directory that holds them"
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else "path"
    try:
        if command == "build":
            print(ensure_binaries(build_if_missing=True))
        elif command == "path":
            print(ensure_binaries())
        else:
            print(f"error: unknown command {command!r}; use 'build' or 'path'", file=sys.stderr)
            return 2
    except BinariesMissing as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
