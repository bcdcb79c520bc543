#!/usr/bin/env bash
# Build (or reuse) the pinned OCI registry of the test bed: main.go on go-containerregistry's
# in-memory registry package, which the chart tests push the packaged chart to
# (`helm push`) and pull it back from (`setup init --chart-ref`).
#
# Cached OUTSIDE the checkout, keyed by the pinned version in versions.env:
#   ${NVCRE_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/nvcre}/registry-<v>-<source hash>/bin/registry
# A stamp file (.complete) marks a finished build. NVCRE_REGISTRY_BIN=<file> uses a
# registry binary you already have.
#
# The last line on stdout is the binary's path; progress goes to stderr.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"

log() { echo "registry: $*" >&2; }
# shellcheck source=../lib/pinned-set.sh
source "$HERE/../lib/pinned-set.sh"

if [[ -n "${NVCRE_REGISTRY_BIN:-}" ]]; then
    if [[ -x "$NVCRE_REGISTRY_BIN" ]]; then
        log "using NVCRE_REGISTRY_BIN=$NVCRE_REGISTRY_BIN"
        echo "$NVCRE_REGISTRY_BIN"
        exit 0
    fi
    log "error: NVCRE_REGISTRY_BIN=$NVCRE_REGISTRY_BIN is not an executable file"
    exit 2
fi

CACHE_ROOT="${NVCRE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/nvcre}"
# main.go is ours: its hash is part of the key, so an edit builds a fresh binary.
SRC_HASH=$(cat "$HERE/main.go" "$HERE/go.mod" "$HERE/go.sum" | sha256sum | cut -c1-12)
SET_DIR="$CACHE_ROOT/registry-${REGISTRY_VERSION}-${SRC_HASH}"
BIN="$SET_DIR/bin"
STAMP="$SET_DIR/.complete"

if [[ -f "$STAMP" ]] && missing_paths "$BIN" -x registry >/dev/null; then
    log "reusing $BIN/registry"
    echo "$BIN/registry"
    exit 0
fi

pin_check "$HERE/go.mod" github.com/google/go-containerregistry "$REGISTRY_VERSION"
command -v go >/dev/null || { log "error: go is not installed; install Go >= 1.26 or set NVCRE_REGISTRY_BIN"; exit 2; }

lock_set "$SET_DIR"
if [[ -f "$STAMP" ]] && missing_paths "$BIN" -x registry >/dev/null; then
    echo "$BIN/registry"
    exit 0
fi

STAGE="$SET_DIR/bin.partial"
rm -rf "$STAGE"
mkdir -p "$STAGE"
export GOFLAGS="${GOFLAGS:-} -mod=mod -trimpath"
export CGO_ENABLED=0
start=$(date +%s)
log "building the registry on go-containerregistry ${REGISTRY_VERSION}"
(cd "$HERE" && go build -ldflags "-s -w" -o "$STAGE/registry" .)
missing_paths "$STAGE" -x registry >/dev/null
rm -rf "$BIN"
mv "$STAGE" "$BIN"
elapsed=$(($(date +%s) - start))
{
    echo "registry=${REGISTRY_VERSION}"
    echo "go=$(go env GOVERSION)"
    echo "build_seconds=${elapsed}"
    echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$STAMP"
log "built in ${elapsed}s into $BIN"
echo "$BIN/registry"
