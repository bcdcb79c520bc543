"""Every command module of nvcrectl and the groups it registers commands on.

Importing a command module registers its commands on groups of ``nvcre.cli.apps``.
A run needs only the modules of the group it invokes (plus the top-level commands, for
the root's help and errors), so ``load`` imports those and nothing else: importing all
eighteen modules and building every command cost about as much as the whole 300 ms
start budget. Add a line here when you add a module under nvcre/cli/; a unit test
checks each line against what importing the module really registers.

Kept apart from ``main`` so shell completion can load the whole command tree without
importing the entry point (no import cycle).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

ROOT = ""  # commands registered on the root app itself

# (module under nvcre.cli, groups it registers on), in registration order: the order
# is the order commands appear in --help, so a partial load lists them as a full one.
COMMAND_MODULES: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (module, frozenset(groups)) for module, groups in (
        ("version", {ROOT}),
        ("sim", {"sim"}),
        ("render", {"certification", "workloadrun"}),
        ("images", {"certification"}),
        ("catalog", {"certification"}),
        ("controller", {"controller"}),
        ("mcp", {"mcp"}),
        ("report", {"certification", "workloadrun"}),
        ("run", {"certification", "workloadrun"}),
        ("rbac", {"rbac"}),
        ("cluster", {"cluster"}),
        ("setup", {"setup"}),
        ("listing", {"certification", "workloadrun"}),
        ("baselines", {"certification"}),
        ("nodes", {ROOT}),
        ("completion", {ROOT}),
        ("workloadrun_ops", {"workloadrun"}),
        ("workflow_render", {"workflow"}),
        ("example", {"certification"}),
    )
)


def modules_for(argv: Sequence[str]) -> list[str]:
    """The command modules a run with these arguments needs: the root's own and the
    invoked group's (the first word that is not an option; the root takes no values)."""
    group = next((word for word in argv if not word.startswith("-")), None)
    return [module for module, groups in COMMAND_MODULES if ROOT in groups or group in groups]


def load(argv: Sequence[str]) -> None:
    """Register the commands a run with ``argv`` needs."""
    _import(modules_for(argv))


def load_all() -> None:
    """Register every command (shell completion, tests that drive the whole app)."""
    _import([module for module, _groups in COMMAND_MODULES])


def _import(modules: list[str]) -> None:
    for module in modules:
        importlib.import_module(f"nvcre.cli.{module}")
    _keep_table_order()


def _keep_table_order() -> None:
    """Commands in the table's order whatever was loaded first: a process that ran
    one group and then another (tests do) lists them as a fresh process would."""
    from nvcre.cli import apps

    rank = {f"nvcre.cli.{module}": i for i, (module, _groups) in enumerate(COMMAND_MODULES)}
    for typer_app in apps.GROUPS.values():
        typer_app.registered_commands.sort(key=lambda info: rank.get(getattr(info.callback, "__module__", ""), -1))
