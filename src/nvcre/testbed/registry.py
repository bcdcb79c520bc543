"""The test bed's OCI registry: a real registry on 127.0.0.1 for `helm push` / `helm pull`.

hack/registry/build.sh builds it once from the Go module proxy (go-containerregistry's
registry package, pinned) into ~/.cache/nvcre and prints its path; ``start_registry``
runs it on a free loopback port and returns ``host:port`` once it listens. It keeps
everything in memory: each start is an empty registry.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nvcre.errors import UserError

BUILD_SCRIPT = Path(__file__).resolve().parents[3] / "hack" / "registry" / "build.sh"


class RegistryMissing(UserError):
    """The registry binary is not built and cannot be built here."""


def registry_binary(timeout_s: float = 900) -> Path:
    """Build or reuse the pinned registry (NVCRE_REGISTRY_BIN names one you have)."""
    if not BUILD_SCRIPT.is_file():
        raise RegistryMissing(f"{BUILD_SCRIPT} not found: not a source checkout; set NVCRE_REGISTRY_BIN")
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=timeout_s)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise RegistryMissing(f"hack/registry/build.sh failed (run `make registry`): {result.stderr.strip()[-2000:]}")
    return Path(lines[-1])


@contextmanager
def start_registry(binary: Path | None = None, timeout_s: float = 30) -> Iterator[str]:
    """Run the registry on 127.0.0.1:<free port>; yields "127.0.0.1:PORT"."""
    proc = subprocess.Popen([str(binary or registry_binary()), "--addr", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout_s)
    try:
        line = first[0].strip() if first else ""
        if not line.startswith("listening on "):
            detail = line or (proc.stderr.read(2000) if proc.poll() is not None else "no answer")
            raise RegistryMissing(f"the registry did not start: {detail}")
        yield line.removeprefix("listening on ")
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
