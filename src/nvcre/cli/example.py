"""``nvcrectl certification example``: a sample Certification from the installed package.

The README's walk-through starts from a Certification file; a wheel has no checkout's
examples/ folder, so the package carries the sample (nvcre/examples/certification.yaml,
kept equal to examples/certification.yaml by a test) and this prints it to stdout, to
redirect into a file and edit.
"""

from __future__ import annotations

from importlib import resources

import typer

from nvcre.cli.apps import certification_app

EXAMPLE = "certification.yaml"


def example_text() -> str:
    """The packaged sample Certification, as shipped (comments kept)."""
    return (resources.files("nvcre") / "examples" / EXAMPLE).read_text(encoding="utf-8")


@certification_app.command("example")
def example() -> None:
    """Print a sample Certification (NCCL all-reduce and Nemotron-5 8B pretraining) to edit and run:
    nvcrectl certification example > certification.yaml"""
    typer.echo(example_text(), nl=False)
