"""The command-module table that lets nvcrectl load only the invoked group is true.

Each module must register commands on exactly the groups the table names (a module
missing from a group's line would make its commands vanish when that group runs), and
a partial load must print the same help as a full one.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import nvcre.cli
from nvcre.cli.commands import COMMAND_MODULES, ROOT, modules_for

_REGISTERED = """
import importlib, json, pkgutil
import nvcre.cli
from nvcre.cli import apps

for info in pkgutil.iter_modules(nvcre.cli.__path__):
    importlib.import_module("nvcre.cli." + info.name)
ours = {id(g) for g in apps.GROUPS.values()}
out = {}
for name, group in apps.GROUPS.items():
    callbacks = [c.callback for c in group.registered_commands]
    for sub in group.registered_groups:  # a group a command module adds (completion)
        if id(sub.typer_instance) not in ours:
            callbacks += [c.callback for c in sub.typer_instance.registered_commands]
    for callback in callbacks:
        out.setdefault(callback.__module__.rsplit(".", 1)[1], set()).add(name)
print(json.dumps({module: sorted(groups) for module, groups in out.items()}))
"""


def test_each_module_registers_on_the_groups_the_table_names():
    out = subprocess.run([sys.executable, "-c", _REGISTERED], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    registered = json.loads(out.stdout)
    table = dict(COMMAND_MODULES)
    assert registered == {name: sorted(groups) for name, groups in table.items() if groups}
    modules = {info.name for info in pkgutil.iter_modules(nvcre.cli.__path__)}
    assert set(table) <= modules


def test_a_group_loads_its_own_modules_and_the_roots():
    assert modules_for(["workflow", "render", "--help"]) == ["version", "nodes", "completion", "workflow_render"]
    assert modules_for(["--help"]) == [m for m, groups in COMMAND_MODULES if ROOT in groups]
    assert "render" in modules_for(["certification"]) and "sim" not in modules_for(["certification"])


HELP = (["--help"], ["certification", "--help"], ["workloadrun", "--help"], ["rbac", "--help"],
        ["certification", "render", "--help"], ["completion", "--help"], ["nosuch"], ["certification", "nosuch"])

_HELP = """
import sys
from nvcre.cli import commands
from nvcre.cli.main import main
if sys.argv[1] == "all":
    commands.load_all()
sys.exit(main(sys.argv[2:]))
"""


def test_partial_load_prints_what_a_full_load_prints():
    for args in HELP:
        partial, full = (subprocess.run([sys.executable, "-c", _HELP, how, *args], capture_output=True, text=True,
                                        timeout=60, env={**__import__("os").environ, "COLUMNS": "100"})
                         for how in ("some", "all"))
        assert (partial.returncode, partial.stdout, partial.stderr) == (full.returncode, full.stdout, full.stderr), args


def test_command_order_does_not_depend_on_what_loaded_first():
    code = """
from nvcre.cli import apps, commands
commands.load(["workloadrun"]); commands.load(["certification"])
print([c.name for c in apps.certification_app.registered_commands])
commands.load_all()
print([c.name for c in apps.certification_app.registered_commands])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    first, second = out.stdout.splitlines()
    assert first == second, out.stderr


def test_shell_completion_sees_every_command():
    """The shell calls nvcrectl back with _NVCRECTL_COMPLETE set: the whole tree loads."""
    import os

    env = {**os.environ, "_NVCRECTL_COMPLETE": "complete_bash", "COMP_WORDS": "nvcrectl workloadrun c",
           "COMP_CWORD": "2"}
    out = subprocess.run([sys.executable, "-m", "nvcre.cli.main"], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.split() == ["cleanup", "cancel"], out.stderr
    from nvcre.cli.completion import kubectl_candidates
    from nvcre.cli import commands

    commands.load_all()
    assert set(kubectl_candidates(["workflow", "r"])) == {"render"}
