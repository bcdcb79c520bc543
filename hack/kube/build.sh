#!/usr/bin/env bash
# Build (or reuse) the pinned test-bed binaries: etcd, kube-apiserver,
# kube-scheduler, kube-controller-manager, kubectl and helm.
#
# The binaries go to a cache directory OUTSIDE the checkout, keyed by the pinned
# versions in versions.env, so a fresh clone on the same machine (CI) reuses them:
#   ${NVCRE_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/nvcre}/kube-<k8s>-etcd-<v>-helm-<v>/bin
# A stamp file (.complete) marks a finished build; without it the set is rebuilt.
# If NVCRE_KUBE_BIN (or KUBEBUILDER_ASSETS) names a directory, it is checked and used.
#
# The last line on stdout is the bin directory; progress goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"

BINARIES=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl helm)

log() { echo "kube: $*" >&2; }
# shellcheck source=../lib/pinned-set.sh
source "$HERE/../lib/pinned-set.sh"

check_dir() { missing_paths "$1" -x "${BINARIES[@]}"; }

for var in NVCRE_KUBE_BIN KUBEBUILDER_ASSETS; do
    dir="${!var:-}"
    if [[ -n "$dir" ]]; then
        if missing=$(check_dir "$dir"); then
            log "using binaries from $var=$dir"
            echo "$dir"
            exit 0
        fi
        log "error: $var=$dir lacks: $missing (needs ${BINARIES[*]})"
        exit 2
    fi
done

CACHE_ROOT="${NVCRE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcre}"
SET_DIR="$CACHE_ROOT/kube-${KUBERNETES_VERSION}-etcd-${ETCD_VERSION}-helm-${HELM_VERSION}"
BIN="$SET_DIR/bin"
STAMP="$SET_DIR/.complete"

if [[ -f "$STAMP" ]] && check_dir "$BIN" >/dev/null; then
    log "reusing $BIN"
    echo "$BIN"
    exit 0
fi

pin_check "$HERE/kubernetes/go.mod" k8s.io/kubernetes "$KUBERNETES_VERSION"
pin_check "$HERE/etcd/go.mod" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
pin_check "$HERE/helm/go.mod" helm.sh/helm/v4 "$HELM_VERSION"

command -v go >/dev/null || { log "error: go is not installed; install Go >= 1.26 or set NVCRE_KUBE_BIN"; exit 2; }

lock_set "$SET_DIR"
# The other build may have finished while we waited.
if [[ -f "$STAMP" ]] && check_dir "$BIN" >/dev/null; then
    echo "$BIN"
    exit 0
fi

STAGE="$SET_DIR/bin.partial"
rm -rf "$STAGE"
mkdir -p "$STAGE"
export GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
export CGO_ENABLED=0
start=$(date +%s)

k8s_minor="${KUBERNETES_VERSION#v1.}"
k8s_minor="${k8s_minor%%.*}"
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    k8s_ldflags+=" -X $pkg.gitVersion=${KUBERNETES_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=${k8s_minor}"
    k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

log "building Kubernetes ${KUBERNETES_VERSION} (apiserver, scheduler, controller-manager, kubectl)"
(cd "$HERE/kubernetes" && go build -ldflags "$k8s_ldflags" -o "$STAGE/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubectl)

log "building etcd ${ETCD_VERSION}"
(cd "$HERE/etcd" && go build -ldflags "-s -w" -o "$STAGE/etcd" .)

log "building helm ${HELM_VERSION}"
(cd "$HERE/helm" && go build \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION}" \
    -o "$STAGE/helm" helm.sh/helm/v4/cmd/helm)

check_dir "$STAGE" >/dev/null
rm -rf "$BIN"
mv "$STAGE" "$BIN"
elapsed=$(($(date +%s) - start))
{
    echo "kubernetes=${KUBERNETES_VERSION}"
    echo "etcd=${ETCD_VERSION}"
    echo "helm=${HELM_VERSION}"
    echo "go=$(go env GOVERSION)"
    echo "build_seconds=${elapsed}"
    echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$STAMP"
log "built in ${elapsed}s into $BIN"
echo "$BIN"
