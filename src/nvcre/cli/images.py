"""`nvcrectl certification images`: every image a Certification would pull, for mirroring.

Offline like ``render`` (platform and GPU from flags): the list is read from the very
objects ``render`` prints (workload and init containers, sidecars, the launcher), so
it cannot drift from what the controller creates. With ``--workload-registry`` the
names are the mirrored ones the pods will pull.
"""

from __future__ import annotations

import typer

from nvcre.cli.apps import certification_app
from nvcre.cli.render import ARCH_HELP, PLATFORM_HELP, REGISTRY_HELP

from nvcre.cli.output import LIST_FORMATS


def certification_images(file: str, *, platform: str | None, gpu_arch: str | None, nodes: int | None = None,
                         adapter: str = "native", workload_registry: str | None = None) -> list[dict]:
    """``[{image, categories}]`` sorted by image, each image once."""
    from nvcre.cli.render import certification_objects
    from nvcre.workloads.registry import images_of

    per_category: list[tuple[str, list[dict]]] = []
    certification_objects(file, platform=platform, gpu_arch=gpu_arch, nodes=nodes, adapter=adapter, namespace=None,
                          workload_registry=workload_registry, per_category=per_category)
    users: dict[str, set[str]] = {}
    for key, objects in per_category:
        for image in images_of(objects):
            users.setdefault(image, set()).add(key)
    return [{"image": image, "categories": sorted(users[image])} for image in sorted(users)]


@certification_app.command("images")
def images_command(
    file: str = typer.Argument(..., help="Certification manifest (YAML)."),
    platform: str = typer.Option(None, "--platform", help=PLATFORM_HELP),
    gpu_arch: str = typer.Option(None, "--gpu-arch", help=ARCH_HELP),
    nodes: int = typer.Option(None, "--nodes", help="Target nodes to synthesize (default 2)."),
    adapter: str = typer.Option("native", "--adapter", help="native (batch/v1 Jobs) or trainjob (Kubeflow Trainer v2)."),
    workload_registry: str = typer.Option(None, "--workload-registry", help=REGISTRY_HELP),
    output: str = typer.Option("table", "--output", "-o",
                               help=f"{', '.join(LIST_FORMATS)} (name: one image a line)."),
) -> None:
    """List every image the Certification's categories would pull, deduplicated and sorted."""
    from nvcre.cli.output import check_format, write_rows

    check_format(output, LIST_FORMATS)
    items = certification_images(file, platform=platform, gpu_arch=gpu_arch, nodes=nodes, adapter=adapter,
                                 workload_registry=workload_registry)
    write_rows(items, output, columns=IMAGE_COLUMNS if output != "wide" else WIDE_IMAGE_COLUMNS,
               name=lambda i: i["image"], document=lambda rows: {"images": list(rows)})


def _registry(item: dict) -> str:
    from nvcre.workloads.registry import split_image

    return split_image(item["image"])[0]


# The categories come last so only they wrap at 80 columns; wide adds the registry host
# a mirror has to serve (Docker Hub names expanded as Docker does) and cuts nothing.
IMAGE_COLUMNS = (("IMAGE", lambda i: i["image"]), ("CATEGORIES", lambda i: ", ".join(i["categories"])))
WIDE_IMAGE_COLUMNS = (IMAGE_COLUMNS[0], ("REGISTRY", _registry), IMAGE_COLUMNS[1])
