"""`nvcrectl completion bash|zsh|fish`, and `kubectl nvcre` completion.

The scripts are typer's own: the shell calls nvcrectl back with ``_NVCRECTL_COMPLETE``
set and gets the candidates, so completion follows the installed commands with
nothing to regenerate. (typer's completion helpers are private modules, stable from
0.16, the lowest typer we allow, to today's; the lowest-versions test runs this.) kubectl (1.26+) completes a plugin by
running ``kubectl_complete-nvcre ARGS... INCOMPLETE`` from PATH and reading one
candidate per line and a final ``:4`` (cobra's "no file completion" directive); the
wheel installs that command beside kubectl-nvcre.
"""

from __future__ import annotations

import sys

import typer
from typer._completion_classes import BashComplete, completion_init
from typer._completion_shared import get_completion_script

from nvcre.cli.apps import app
from nvcre.errors import UserError

SHELLS = ("bash", "zsh", "fish")
PROG = "nvcrectl"
COMPLETE_VAR = "_NVCRECTL_COMPLETE"
NO_FILE_COMPLETION = ":4"

completion_init()  # typer's bash/zsh/fish classes answer the shell's callback
completion_app = typer.Typer(help="Shell completion scripts.", no_args_is_help=True)
app.add_typer(completion_app, name="completion")


def completion_script(shell: str) -> str:
    if shell not in SHELLS:
        raise UserError(f"completion: unknown shell {shell!r}; choose one of {', '.join(SHELLS)}")
    return get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell).rstrip("\n") + "\n"


def _install_hint(shell: str) -> str:
    return {
        "bash": "source <(nvcrectl completion bash)   # in ~/.bashrc",
        "zsh": "source <(nvcrectl completion zsh)    # in ~/.zshrc, after compinit",
        "fish": "nvcrectl completion fish > ~/.config/fish/completions/nvcrectl.fish",
    }[shell]


def _make(shell: str):
    def command() -> None:
        sys.stdout.write(completion_script(shell))

    command.__doc__ = f"Print the {shell} completion script. Use: {_install_hint(shell)}"
    return command


for _shell in SHELLS:
    completion_app.command(_shell)(_make(_shell))


def kubectl_candidates(words: list[str]) -> list[str]:
    """Candidates for `kubectl nvcre WORDS...`, the last word being the one typed so far."""
    args, incomplete = (words[:-1], words[-1]) if words else ([], "")
    complete = BashComplete(typer.main.get_command(app), {}, "kubectl-nvcre", COMPLETE_VAR)
    return [item.value for item in complete.get_completions(args, incomplete)]
