"""Benchmark: a 512-node simulated fleet registers in under 30 s and stays Ready on < 1 core.

Starts the local control plane (or uses ``--kubeconfig``), starts the fake kubelet for
N nodes, and prints:

* registration: seconds from starting the kubelet process until every Node, Lease
  (and ResourceSlice) exists, against the 30 s budget;
* steady state: CPU of the kubelet process over ``--seconds`` (utime+stime from
  /proc/<pid>/stat), in cores, against the 1-core budget, while it renews 512 leases
  every 10 s;
* Ready: how many nodes the node-lifecycle controller still reports Ready at the end
  (a missed lease would turn them Unknown after the grace period).

Run: ``.venv/bin/python bench/fleet.py [--nodes 512] [--seconds 60]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from nvcre.sim.apiclient import ApiClient, load_kubeconfig
from nvcre.sim.fleet import FLEET_LABEL
from nvcre.sim.kubelet import KubeletConfig
from nvcre.sim.process import self_signed_kubelet_cert, start_fleet, stop_fleet

REGISTER_BUDGET_S = 30.0
CPU_BUDGET_CORES = 1.0


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def ready_count(kubeconfig: str, fleet: str) -> tuple[int, int]:
    api = ApiClient(load_kubeconfig(kubeconfig))
    try:
        nodes = await api.get("/api/v1/nodes", params={"labelSelector": f"{FLEET_LABEL}={fleet}"})
        items = nodes.get("items", [])
        ready = sum(
            1 for n in items
            if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))
        )
        return ready, len(items)
    finally:
        await api.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--seconds", type=float, default=60.0, help="steady-state measurement window")
    parser.add_argument("--kubeconfig", help="use this cluster instead of starting the local control plane")
    parser.add_argument("--dra", action="store_true", help="DRA-only fleet (also creates ResourceSlices)")
    options = parser.parse_args()

    plane = None
    work = Path(tempfile.mkdtemp(prefix="nvcre-bench-fleet-"))
    if options.kubeconfig:
        kubeconfig = options.kubeconfig
        cert, key = self_signed_kubelet_cert(work)
        client_ca = None
    else:
        from nvcre.testbed.controlplane import ControlPlane

        plane = ControlPlane(work / "cp")
        plane.start()
        print(f"control plane: started in {plane.start_seconds:.1f}s")
        kubeconfig = str(plane.kubeconfig)
        cert, key, client_ca = str(plane.kubelet_serving_cert), str(plane.kubelet_serving_key), str(plane.kubelet_client_ca)

    config = KubeletConfig(kubeconfig=kubeconfig, state_dir=str(work / "sim"), nodes=options.nodes, racks=8,
                           dra=options.dra, fleet_name="bench", time_scale=60.0, tls_cert=cert, tls_key=key,
                           client_ca=client_ca)
    try:
        begin = time.monotonic()
        handle = start_fleet(config, timeout_s=120)
        wall = time.monotonic() - begin
        ready, total = asyncio.run(ready_count(kubeconfig, "bench"))
        print(f"registration: {total} nodes ({ready} Ready) in {handle.registered_seconds:.2f}s of API calls, "
              f"{wall:.2f}s including process start; budget {REGISTER_BUDGET_S:.0f}s -> "
              f"ratio {wall / REGISTER_BUDGET_S:.3f}")

        cpu0, t0 = cpu_seconds(handle.pid), time.monotonic()
        time.sleep(options.seconds)
        cpu1, t1 = cpu_seconds(handle.pid), time.monotonic()
        cores = (cpu1 - cpu0) / (t1 - t0)
        ready, total = asyncio.run(ready_count(kubeconfig, "bench"))
        print(f"steady state: kubelet used {cpu1 - cpu0:.2f} CPU-s over {t1 - t0:.1f}s = {cores:.3f} cores "
              f"(budget {CPU_BUDGET_CORES:.0f} core -> ratio {cores / CPU_BUDGET_CORES:.3f}); RSS {rss_mib(handle.pid):.0f} MiB")
        print(f"ready after {t1 - t0:.0f}s: {ready}/{total} nodes Ready")
        leases = options.nodes * (t1 - t0) / 10.0
        print(f"lease renewals expected in the window: {leases:.0f} ({leases / (t1 - t0):.1f}/s)")
        ok = wall < REGISTER_BUDGET_S and cores < CPU_BUDGET_CORES and ready == total == options.nodes
        print(json.dumps({"nodes": options.nodes, "registerSeconds": round(wall, 3),
                          "apiRegisterSeconds": handle.registered_seconds, "kubeletCores": round(cores, 4),
                          "readyAtEnd": ready, "withinBudget": ok}))
        return 0 if ok else 1
    finally:
        stop_fleet(Path(config.state_dir), delete=plane is None)
        if plane is not None:
            plane.stop()


if __name__ == "__main__":
    sys.exit(main())
