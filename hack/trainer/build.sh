#!/usr/bin/env bash
# Build (or reuse) the pinned Kubeflow Trainer test-bed set: the Trainer v2 controller
# manager, the JobSet controller manager and both projects' CRDs.
#
# Same scheme as hack/kube/build.sh: a cache directory OUTSIDE the checkout, keyed by
# the pins in versions.env, a staging directory and a stamp, under a flock:
#   ${NVCRE_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/nvcre}/trainer-<v>-jobset-<v>/
#     bin/trainer-controller-manager  bin/jobset-controller-manager
#     crds/trainer/*.yaml  crds/jobset/*.yaml
# The stamp (.complete) records a hash of the Go sources here, so editing main.go or
# a go.mod rebuilds. If NVCRE_TRAINER_DIR names a directory of that layout, it is
# checked and used. The CRDs come from the very module downloads the binaries are
# built from (go mod download -json gives their directories).
#
# The last line on stdout is the set directory; progress goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"

BINARIES=(trainer-controller-manager jobset-controller-manager)
CRD_FILES=(
    trainer/trainer.kubeflow.org_trainjobs.yaml
    trainer/trainer.kubeflow.org_trainingruntimes.yaml
    trainer/trainer.kubeflow.org_clustertrainingruntimes.yaml
    jobset/jobset.x-k8s.io_jobsets.yaml
)

log() { echo "trainer: $*" >&2; }
# shellcheck source=../lib/pinned-set.sh
source "$HERE/../lib/pinned-set.sh"

check_dir() {
    local missing=() m
    m=$(missing_paths "$1" -x "${BINARIES[@]/#/bin/}") || missing+=($m)
    m=$(missing_paths "$1" -f "${CRD_FILES[@]/#/crds/}") || missing+=($m)
    ((${#missing[@]} == 0)) || { echo "${missing[*]}"; return 1; }
}

if [[ -n "${NVCRE_TRAINER_DIR:-}" ]]; then
    if missing=$(check_dir "$NVCRE_TRAINER_DIR"); then
        log "using NVCRE_TRAINER_DIR=$NVCRE_TRAINER_DIR"
        echo "$NVCRE_TRAINER_DIR"
        exit 0
    fi
    log "error: NVCRE_TRAINER_DIR=$NVCRE_TRAINER_DIR lacks: $missing"
    exit 2
fi

# Trainer's go.mod decides the JobSet API it speaks; the JobSet build must match it.
pin_check "$HERE/trainer/go.mod" github.com/kubeflow/trainer/v2 "$TRAINER_VERSION"
pin_check "$HERE/trainer/go.mod" sigs.k8s.io/jobset "$JOBSET_VERSION"
pin_check "$HERE/jobset/go.mod" sigs.k8s.io/jobset "$JOBSET_VERSION"

SOURCE_HASH=$(cd "$HERE" && cat versions.env trainer/go.mod trainer/go.sum trainer/main.go jobset/go.mod jobset/go.sum \
    | sha256sum | cut -c1-16)
CACHE_ROOT="${NVCRE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcre}"
SET_DIR="$CACHE_ROOT/trainer-${TRAINER_VERSION}-jobset-${JOBSET_VERSION}"
STAMP="$SET_DIR/.complete"

fresh() { [[ -f "$STAMP" ]] && grep -qx "source_hash=$SOURCE_HASH" "$STAMP" && check_dir "$SET_DIR" >/dev/null; }

if fresh; then
    log "reusing $SET_DIR"
    echo "$SET_DIR"
    exit 0
fi

command -v go >/dev/null || { log "error: go is not installed; install Go >= 1.26 (Trainer v2.3.0 needs it) or set NVCRE_TRAINER_DIR"; exit 2; }

lock_set "$SET_DIR"
if fresh; then
    echo "$SET_DIR"
    exit 0
fi

STAGE="$SET_DIR/stage"
rm -rf "$STAGE" "$STAMP"
mkdir -p "$STAGE/bin" "$STAGE/crds/trainer" "$STAGE/crds/jobset"
export GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
export CGO_ENABLED=0
start=$(date +%s)

log "building the Kubeflow Trainer ${TRAINER_VERSION} controller manager"
(cd "$HERE/trainer" && go build -ldflags "-s -w" -o "$STAGE/bin/trainer-controller-manager" .)

log "building the JobSet ${JOBSET_VERSION} controller manager"
(cd "$HERE/jobset" && go build -ldflags "-s -w" -o "$STAGE/bin/jobset-controller-manager" sigs.k8s.io/jobset)

module_dir() {  # the module cache directory of module@version (downloaded if needed)
    (cd "$HERE/$1" && go mod download -json "$2@$3") | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'
}
trainer_src=$(module_dir trainer github.com/kubeflow/trainer/v2 "$TRAINER_VERSION")
jobset_src=$(module_dir jobset sigs.k8s.io/jobset "$JOBSET_VERSION")
[[ -d "$trainer_src" && -d "$jobset_src" ]] || { log "error: module sources not found ($trainer_src, $jobset_src)"; exit 1; }
cp "$trainer_src"/manifests/base/crds/trainer.kubeflow.org_*.yaml "$STAGE/crds/trainer/"
cp "$jobset_src"/config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml "$STAGE/crds/jobset/"
chmod -R u+w "$STAGE/crds"

check_dir "$STAGE" >/dev/null || { log "error: staged set incomplete: $(check_dir "$STAGE")"; exit 1; }
rm -rf "$SET_DIR/bin" "$SET_DIR/crds"
mv "$STAGE/bin" "$STAGE/crds" "$SET_DIR/"
rmdir "$STAGE"
elapsed=$(($(date +%s) - start))
{
    echo "trainer=${TRAINER_VERSION}"
    echo "jobset=${JOBSET_VERSION}"
    echo "source_hash=${SOURCE_HASH}"
    echo "go=$(go env GOVERSION)"
    echo "build_seconds=${elapsed}"
    echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$STAMP"
log "built in ${elapsed}s into $SET_DIR"
echo "$SET_DIR"
