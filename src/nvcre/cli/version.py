"""`nvcrectl version` (and `--version`): the CLI version and the API it speaks."""

from __future__ import annotations

import typer

from nvcre import API_GROUP_VERSION, __version__
from nvcre.cli.apps import app
from nvcre.cli.output import check_format, write_document


@app.command("version")
def version(output: str = typer.Option("text", "--output", "-o", help="text, json or yaml.")) -> None:
    """Print the nvcrectl version and the API it speaks."""
    check_format(output, ("text", "json", "yaml"))
    if output == "text":
        typer.echo(f"nvcrectl {__version__} (API {API_GROUP_VERSION})")
        return
    import platform

    write_document({"version": __version__, "apiVersion": API_GROUP_VERSION,
                    "python": platform.python_version()}, output)
