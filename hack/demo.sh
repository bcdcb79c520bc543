#!/usr/bin/env bash
# The README's first command (make demo): the product brief's failure sample, end to end.
#
# Starts the local test bed (a real control plane from the pinned binaries) with a
# simulated 16-node H100 fleet in which gpu-node-07 has a degraded NIC and gpu-node-12
# loses a GPU mid-run, installs nvcre with Helm, runs the nvcre controller as a local
# process, runs the Certification, prints its report and writes the HTML report.
# The test bed stays up so you can look around; `make demo-down` stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."

NVCRECTL=.venv/bin/nvcrectl
STATE="${NVCRE_DEMO_DIR:-$HOME/.cache/nvcre/demo}"
OUT="${NVCRE_DEMO_OUT:-out}"
mkdir -p "$STATE" "$OUT"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

stop_controller() {
  if [ -f "$STATE/controller.pid" ]; then
    kill "$(cat "$STATE/controller.pid")" 2>/dev/null || true
    rm -f "$STATE/controller.pid"
  fi
}

if [ "${1:-}" = "down" ]; then
  stop_controller
  "$NVCRECTL" sim down || true
  exit 0
fi

say "Starting the test bed: control plane + simulated fleet (seeds' failure sample)"
stop_controller
"$NVCRECTL" sim down >/dev/null 2>&1 || true
"$NVCRECTL" sim up --scenario examples/scenarios/seed-failure-sample.yaml --time-scale 60 | tee "$STATE/sim-up.txt"
KUBECONFIG=$(sed -n 's/^export KUBECONFIG=//p' "$STATE/sim-up.txt" | tail -1)
[ -n "$KUBECONFIG" ] || { echo "demo: sim up printed no kubeconfig" >&2; exit 1; }
export KUBECONFIG

say "Installing nvcre with Helm (CRDs, RBAC, default LogProfiles; the controller runs locally)"
# --skip-phases deps: the demo runs the native batch/v1 adapter, so no Kubeflow Trainer (nor a pull from ghcr.io)
"$NVCRECTL" setup init --auto-approve --skip-phases deps --set controller.replicas=0

say "Starting the nvcre controller (log: $STATE/controller.log)"
"$NVCRECTL" controller run --kubeconfig "$KUBECONFIG" >"$STATE/controller.log" 2>&1 &
echo $! >"$STATE/controller.pid"

say "Running the Certification (examples/demo-certification.yaml)"
set +e
"$NVCRECTL" certification run --cert-file examples/demo-certification.yaml --wait --grant-run-access \
  --results-file "$OUT/demo-report.json" --html-file "$OUT/demo-report.html" | tee "$STATE/run.txt"
rc=${PIPESTATUS[0]}
set -e
ns=$(sed -n 's/.*namespace[^A-Za-z0-9-]*\(nvcrectl-[0-9a-z-]*\).*/\1/p' "$STATE/run.txt" | head -1)

# The brief's sample fails: exit code 1 is what a FAILED certification returns.
if [ "$rc" -ne 1 ]; then
  echo "demo: expected the certification to FAIL (exit 1), got exit $rc" >&2
  exit 1
fi
.venv/bin/python - "$OUT/demo-report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
named = {(n["name"], n["reason"]) for n in report.get("failedNodeDetails", [])}
want = {("gpu-node-07", "ThresholdViolation"), ("gpu-node-12", "HardwareFailureDetected")}
if named != want:
    sys.exit(f"demo: the report names {sorted(named)}, expected exactly {sorted(want)}")
print("demo check: the report names exactly gpu-node-07 ThresholdViolation and gpu-node-12 HardwareFailureDetected")
PY

cat <<TXT

The HTML report: $OUT/demo-report.html   (JSON: $OUT/demo-report.json)

Look around:
  export KUBECONFIG=$KUBECONFIG
  kubectl get nvcre -A                                  # every nvcre object, with its columns
  kubectl -n ${ns:-<namespace>} describe certification gpu-cluster-cert   # conditions and Events
  kubectl get nodes -L nvidia.com/gpu.product           # the simulated fleet
  .venv/bin/nvcrectl certification report gpu-cluster-cert -n ${ns:-<namespace>} -o markdown
  .venv/bin/nvcrectl sim status

Stop everything: make demo-down
TXT
