"""The per-pair bandwidth check: one MPI Job that measures every pair of its nodes.

Diagnose asks for it when a failing cross check points at a link (docs/diagnose.md):
the group's launcher runs the category's own nccl-tests command once per pair of
worker hosts, two nodes at a time (``mpirun -H a:slots,b:slots``), in round-robin
steps (the circle method: every pair exactly once, each node in one pair per step,
the pairs of a step side by side), as NIC mesh checks do. Each pair prints one line

    # nvcre-pair <host a> <host b> busbw=<peak bus bandwidth GB/s, or -> rc=<exit code>

and at the end the slowest pair's full nccl-tests output follows, so the Job's own
figure (and its threshold) is the slowest pair's. A pair whose run failed has no
figure (``-``): crash evidence, never a slow measurement. The script exits non-zero
when any pair failed. It is plain bash (arrays, ``mapfile``, ``awk``), as in the
images the catalog's MPI workloads use.

The steps run one after another, so the Job's time grows with their number (``steps``):
its timeouts (the controller's timeoutPerJob, the Kubernetes backstop) are scaled by it
(``job_seconds``), else 64 nodes (63 steps) would be killed a few steps in.
"""

from __future__ import annotations

import os
import re

from nvcre.catalog.model import ResolvedCategory

#: The line that starts the check; it prints the hostfile and the per-pair command. The
#: simulated fleet recognises the check by it (as it recognises an nccl-tests binary).
BANNER = "# nvcre-pairwise: every pair of the hostfile's hosts runs"
PAIR_PREFIX = "# nvcre-pair "
_NCCL_BINARY = re.compile(r"^(all_reduce|all_gather|alltoall|sendrecv|reduce_scatter|broadcast|reduce)_perf(_mpi)?$")

# $1: the hostfile; the rest: the mpirun command line without a hostfile (timeout .. mpirun .. binary args)
SCRIPT = r"""set -u
echo "BANNER" "$@"
hostfile=$1; shift
cmd=("$@")
mapfile -t hosts < <(awk 'NF {print $1}' "$hostfile")
slots=$(awk 'NF {for (i = 2; i <= NF; i++) if ($i ~ /^slots=/) {print substr($i, 7); exit}}' "$hostfile")
slots=${slots:-1}
dir=$(mktemp -d)
pair() {  # <host a> <host b> <file>: the command on just these two hosts, then its summary line
  local argv=() t rc bw
  for t in "${cmd[@]}"; do
    argv+=("$t")
    case "${t##*/}" in mpirun|mpiexec) argv+=(-H "$1:$slots,$2:$slots") ;; esac
  done
  "${argv[@]}" > "$3" 2>&1
  rc=$?
  bw=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 12 {if ($8 + 0 > b) b = $8 + 0; if ($12 + 0 > b) b = $12 + 0} END {if (b > 0) print b}' "$3")
  [ "$rc" = 0 ] || bw=""
  echo "${bw:--} $rc" > "$3.sum"
  echo "PAIR_PREFIX$1 $2 busbw=${bw:--} rc=$rc" > "$3.line"
}
ring=("${hosts[@]}")
if [ $(( ${#ring[@]} % 2 )) = 1 ]; then ring+=(""); fi
m=${#ring[@]}
failed=0; low=""; slowest=""
for ((step = 0; step < m - 1; step++)); do
  files=()
  for ((k = 0; k < m / 2; k++)); do
    a=${ring[k]}; b=${ring[m - 1 - k]}
    if [ -z "$a" ] || [ -z "$b" ]; then continue; fi
    f="$dir/$step-$k"; files+=("$f")
    pair "$a" "$b" "$f" &
  done
  wait
  for f in "${files[@]}"; do
    cat "$f.line"
    read -r bw rc < "$f.sum"
    if [ "$rc" != 0 ]; then failed=$((failed + 1)); continue; fi
    if [ "$bw" != - ] && { [ -z "$low" ] || awk -v x="$bw" -v y="$low" 'BEGIN {exit !(x < y)}'; }; then low=$bw; slowest=$f; fi
  done
  ring=("${ring[0]}" "${ring[m - 1]}" "${ring[@]:1:m - 2}")
done
echo "# nvcre-pairwise: ${#hosts[@]} hosts, $failed failed pairs; the slowest pair (${low:-none}) follows"
if [ -n "$slowest" ]; then cat "$slowest"; fi
rm -rf "$dir"
[ "$failed" = 0 ]
""".replace("PAIR_PREFIX", PAIR_PREFIX).replace("BANNER", BANNER)


MAX_JOB_SECONDS = 720 * 3600  # the API's longest duration (api.common.parse_duration)


def steps(hosts: int) -> int:
    """Round-robin steps the script runs for ``hosts`` hosts: n - 1 for even n, n for odd n
    (a blank joins the ring; its partner sits the step out). At least 1."""
    return max(hosts - 1 + hosts % 2, 1)


def job_seconds(seconds: float, hosts: int) -> int:
    """A timeout for the whole check, from ``seconds`` budgeted for one run of the workload:
    each step is such a run (on two nodes, the step's pairs side by side) and the steps run
    in turn, so ``seconds`` per step; at most ``MAX_JOB_SECONDS``."""
    return int(min(seconds * steps(hosts), MAX_JOB_SECONDS))


def format_seconds(seconds: int) -> str:
    """``seconds`` as a duration the API accepts (``15h45m``, ``90s``)."""
    h, rest = divmod(int(seconds), 3600)
    m, s = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (s, "s")) if v) or "1s"


def available(resolved: ResolvedCategory, adapter: str) -> bool:
    """Whether this category can run the per-pair check: an nccl-tests binary under mpirun,
    rendered by the native adapter (its launcher runs the script; a Trainer launcher does not)."""
    w = resolved.workload
    return (adapter == "native" and w.launch == "mpi" and w.mpi is not None
            and bool(_NCCL_BINARY.match(os.path.basename(w.mpi.binary))))


def launcher_args(hostfile: str, command: list[str], args: list[str]) -> list[str]:
    """The launcher's command for the check: the script, the hostfile, then the per-pair mpirun
    command (``command`` + ``args`` without a hostfile: the script names the two hosts)."""
    return ["/bin/bash", "-c", SCRIPT, "nvcre-pairwise", hostfile, *command, *args]
