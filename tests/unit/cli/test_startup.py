"""nvcrectl starts fast: --help loads none of the heavy libraries, and stays under budget.

The module check is exact (it fails on any new top-level import of a heavy library in
a command module); the timing is CPU time spent after the interpreter started (so the
interpreter's own start and waiting for a core on a loaded machine do not count), the
best of a few fresh processes.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("kubernetes", "urllib3", "aiohttp", "cel", "prompt_toolkit", "pydantic", "rich", "yaml", "nvcre.api",
         "nvcre.catalog", "nvcre.report", "nvcre.sim", "nvcre.controller", "nvcre.kube")
BUDGET_S = 0.3


def _loaded_after(args: list[str]) -> list[str]:
    code = (
        "import sys, json\n"
        "from nvcre.cli.main import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + '.')})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_help_loads_no_heavy_library():
    assert _loaded_after(["--help"]) == []


def test_every_group_help_loads_no_heavy_library():
    # Typer (0.29) would coerce every option through pydantic; nvcre.cli.typer_fast
    # keeps plain values off that path, so not even pydantic loads.
    for group in ("certification", "workloadrun", "sim", "setup", "cluster", "rbac", "controller", "mcp",
                  "workflow", "completion"):
        assert _loaded_after([group, "--help"]) == [], group


# What people wait for when they start nvcrectl: help, the version, a command's help.
STARTS = (["--help"], ["--version"], ["version", "-o", "json"], ["certification", "list-categories", "--help"],
          ["nodes", "--help"], ["certification", "report", "--help"], ["certification", "render", "--help"])


def test_command_starts_load_no_heavy_library():
    for args in STARTS:
        assert _loaded_after(args) == [], args


def test_command_starts_under_budget():
    """CPU seconds after the interpreter is up, best of three: waiting for a core on a
    shared machine is not ours, and neither is the interpreter's own start."""
    for args in STARTS:
        best = min(_cpu_in_process(args) for _ in range(3))
        assert best < BUDGET_S, f"nvcrectl {' '.join(args)} took {best:.3f} CPU s to run (budget {BUDGET_S}s)"


def _cpu_in_process(args: list[str]) -> float:
    """CPU time (user + system) a fresh interpreter spends importing nvcrectl and running ``args``."""
    code = (
        "import time\n"
        "start = time.process_time()\n"
        "import sys\n"
        "from nvcre.cli.main import main\n"
        f"code = main({args!r})\n"
        "sys.stderr.write(f'\\nCPU {time.process_time() - start}\\n')\n"
        "sys.exit(code)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return float(out.stderr.strip().splitlines()[-1].split()[1])


def test_nodes_command_choices_match_the_judge():
    from nvcre.cli import nodes
    from nvcre.judge.ledger import RESULTS
    from nvcre.judge.stages import STAGES

    assert (nodes.STAGES, nodes.RESULTS) == (tuple(STAGES), tuple(RESULTS))
