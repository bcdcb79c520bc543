"""`nvcrectl version`."""

from __future__ import annotations

import typer

from nvcre import API_GROUP_VERSION, __version__
from nvcre.cli.apps import app


@app.command("version")
def version() -> None:
    """Print the nvcrectl version and the API it speaks."""
    typer.echo(f"nvcrectl {__version__} (API {API_GROUP_VERSION})")
