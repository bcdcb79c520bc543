"""Image references of rendered workloads: list them, and rewrite them to a mirror.

Air-gapped sites mirror every image a Certification pulls and point nvcre at the
mirror with ``workloadRegistry`` (``--workload-registry``). The rule, kept by the
controller and the CLI alike (one function, applied in ``render_workload``):

* the registry host of the image is replaced by the mirror; the repository path
  and the tag and/or digest are kept:
  ``nvcr.io/nvidia/pytorch:25.06-py3`` -> ``mirror.local:5000/nvidia/pytorch:25.06-py3``;
* a name without a registry host is a Docker Hub name and is expanded first as
  Docker does: ``ubuntu:22.04`` -> ``<mirror>/library/ubuntu:22.04``,
  ``bitnami/kubectl`` -> ``<mirror>/bitnami/kubectl``;
* the mirror may carry a path prefix (``mirror.local/nvcr``), which goes in front
  of the repository path;
* an image already under the mirror is left alone, so rewriting is idempotent.

The first path component is a registry host when it contains ``.`` or ``:`` or is
``localhost`` (Docker's rule).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

# host[:port][/path] — lower-case host labels, optional port, optional path of
# lower-case repository components (the distribution spec's alphabet).
from nvcre.api.rules import MIRROR_PATTERN  # noqa: E402  (one pattern: the API field and the CLI flag)
DOCKER_HUB = "docker.io"
# Keys holding an image reference in the objects nvcre renders: pod containers and
# init containers (workload, sidecars, launcher) and a TrainJob's trainer.
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_SKIP_KINDS = frozenset({"ConfigMap", "Secret"})


def check_mirror(value: str, field: str = "workloadRegistry") -> str | None:
    """The problem with a mirror value, or None when it is usable."""
    if not value or len(value) > 253 or not re.fullmatch(MIRROR_PATTERN, value):
        return (f"{field}: {value!r} is not a registry; give host[:port][/path], e.g. mirror.local:5000 "
                "(no scheme, no tag, no trailing slash)")
    return None


def split_image(image: str) -> tuple[str, str]:
    """(registry host, the rest: repository path plus tag/digest), Docker Hub names expanded."""
    first, sep, rest = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    if not sep:  # "ubuntu:22.04": an official Docker Hub image
        return DOCKER_HUB, f"library/{image}"
    return DOCKER_HUB, image


def mirror_image(image: str, mirror: str | None) -> str:
    """``image`` pulled from ``mirror`` instead (see the module docstring for the rule)."""
    if not mirror or not image:
        return image
    mirror = mirror.rstrip("/")
    if image.startswith(mirror + "/"):
        return image
    _, rest = split_image(image)
    return f"{mirror}/{rest}"


def _pod_specs(node: Any) -> Iterable[dict]:
    """Every dict that holds a container list, anywhere under ``node``."""
    if isinstance(node, dict):
        if any(isinstance(node.get(k), list) for k in _CONTAINER_LISTS):
            yield node
        for value in node.values():
            yield from _pod_specs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _pod_specs(value)


def _trainers(node: Any) -> Iterable[dict]:
    """TrainJob ``spec.trainer`` blocks (their ``image`` replaces the runtime's)."""
    if isinstance(node, dict):
        trainer = node.get("trainer")
        if isinstance(trainer, dict) and isinstance(trainer.get("image"), str):
            yield trainer
        for value in node.values():
            yield from _trainers(value)
    elif isinstance(node, list):
        for value in node:
            yield from _trainers(value)


def _image_holders(obj: dict) -> Iterable[dict]:
    if obj.get("kind") in _SKIP_KINDS:
        return
    for spec in _pod_specs(obj):
        for key in _CONTAINER_LISTS:
            for container in spec.get(key) or []:
                if isinstance(container, dict) and isinstance(container.get("image"), str):
                    yield container
    yield from _trainers(obj)


def images_of(objects: Iterable[dict]) -> list[str]:
    """Every image the objects would pull, deduplicated and sorted."""
    return sorted({h["image"] for obj in objects for h in _image_holders(obj) if h["image"]})


def rewrite_images(objects: list[dict], mirror: str | None) -> list[dict]:
    """The objects with every image pulled from ``mirror`` (in place; returned for chaining)."""
    if mirror:
        for obj in objects:
            for holder in _image_holders(obj):
                holder["image"] = mirror_image(holder["image"], mirror)
    return objects
