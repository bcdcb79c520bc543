"""Benchmark: resolve and render the whole catalog for a 4096-node target.

Prints the figures the issue budgets: rendering every category for 4096 nodes
(target < 1 s) and resolving one category (target < 20 ms), for both adapters.
Multi-node categories render one full-scale job over all nodes; per-node categories
(loopback, NVSwitch loopback, DCGM) render one job per node, as the controller would.
Last, what a person waits for: ``nvcrectl certification render -o yaml`` of the whole
catalog for 4096 nodes (about 20,500 objects, 48 MB), the CLI's full path in a fresh
process, in CPU seconds; the bench exits 1 when that misses its budget.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from nvcre.catalog.data import load_catalog
from nvcre.catalog.resolve import resolve_category
from nvcre.workloads.render import render_workload
from nvcre.planning.partition import plan_groups

NODES = [f"gpu-node-{i:04d}" for i in range(4096)]
PLATFORM, ARCH = "aws", "gb200"
WHOLE_CATALOG = Path(__file__).resolve().parents[1] / "tests/unit/cli/whole-catalog.yaml"
CLI_YAML_BUDGET_S = 10.0  # CPU s on a loaded 2-core machine (measured 6.4-8.0); 21.6 s before shape reuse in nvcre.workloads.output (docs/design/175-...)


def resolve_all():
    out = []
    for entry in load_catalog().sorted_entries():
        out.append(resolve_category({"domain": entry.domain, "variant": entry.variant}, None, platform=PLATFORM, gpu_arch=ARCH))
    return out


def render_all(adapter: str) -> tuple[int, int]:
    objects = jobs = 0
    for r in resolve_all():
        size = r.nodes_per_job or r.valid_node_count(len(NODES))
        plan = plan_groups(r.test_scale if r.test_scale != "diagnose" else "full-scale", NODES, nodes_per_job=size)
        for group in plan.groups:
            objects += len(render_workload(r, name=f"bench-{r.variant}-{group.name}", namespace="bench",
                                           nodes=list(group.nodes), adapter=adapter, job=group.name, group=group.name))
            jobs += 1
    return objects, jobs


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def cli_render_yaml(nodes: int = 4096) -> tuple[float, int]:
    """CPU seconds and output bytes of the CLI rendering the whole catalog as YAML."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([sys.executable, "-m", "nvcre.cli.main", "certification", "render", str(WHOLE_CATALOG),
                          "--platform", PLATFORM, "--gpu-arch", ARCH, "--nodes", str(nodes), "-o", "yaml"],
                         capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), len(out.stdout)


def main() -> int:
    start = time.perf_counter()
    load_catalog()
    print(f"catalog parse (first use, cached after): {1000 * (time.perf_counter() - start):.1f} ms")
    one = lambda: resolve_category({"domain": "training", "variant": "nemotron5-8b"}, None, platform=PLATFORM, gpu_arch=ARCH)  # noqa: E731
    best, median = best_of(one, 200)
    print(f"resolve one category (training/nemotron5-8b, {PLATFORM}/{ARCH}): best {1000 * best:.2f} ms, "
          f"median {1000 * median:.2f} ms (budget 20 ms, ratio {median / 0.020:.3f})")
    for adapter in ("native", "trainjob"):
        counts = render_all(adapter)
        best, median = best_of(lambda: render_all(adapter), 3)
        print(f"render whole catalog for 4096 nodes ({adapter}): {counts[1]} jobs, {counts[0]} objects, "
              f"best {best:.3f} s, median {median:.3f} s (budget 1 s, ratio {median / 1.0:.2f})")
    from nvcre.workloads.mpi import generate_keypair

    best, median = best_of(generate_keypair, 200)
    print(f"ssh key pair per MPI job (native): median {1000 * median:.2f} ms")
    cpu = min(cli_render_yaml()[0] for _ in range(2))
    size = cli_render_yaml()[1]
    print(f"nvcrectl certification render -o yaml, whole catalog, 4096 nodes: {cpu:.2f} CPU s, {size / 1e6:.1f} MB "
          f"(budget {CLI_YAML_BUDGET_S:.0f} CPU s, ratio {cpu / CLI_YAML_BUDGET_S:.2f})")
    return 0 if cpu <= CLI_YAML_BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
