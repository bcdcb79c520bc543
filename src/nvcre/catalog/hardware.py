"""The catalog's GPU defaults table, read through ``nvcre.discovery.gpu``'s pure sizing rule.

Discovery knows how to read such a table; the catalog owns the table. Keeping the
lookup here is what lets ``nvcre.discovery`` stay free of catalog imports.
"""

from __future__ import annotations

from nvcre.catalog.data import load_catalog
from nvcre.discovery.gpu import HardwareDefaults, defaults_from_table, parse_product
from nvcre.errors import UserError


def hardware_defaults(arch: str, platform: str | None = None) -> HardwareDefaults:
    """Sizing for ``arch`` on ``platform`` from the catalog's table (see ``defaults_from_table``)."""
    return defaults_from_table(load_catalog().gpu_defaults, arch, platform)


def known_architectures() -> tuple[str, ...]:
    return load_catalog().architectures


def check_gpu_arch(value: str) -> str:
    """Validate ``--gpu-arch`` (an architecture or a product name) against the defaults table."""
    arch = parse_product(value) or (value or "").strip().lower()
    if arch not in known_architectures():
        raise UserError(f"--gpu-arch: unknown GPU architecture {value!r}; valid: {', '.join(known_architectures())}")
    return arch


def is_known_architecture(arch: str) -> bool:
    """Whether the catalog's defaults table has a row for ``arch`` (else sizing is inferred)."""
    return arch in known_architectures()
