# Shared by hack/kube/build.sh and hack/trainer/build.sh: checks and the build lock of a
# pinned binary set cached outside the checkout. Source it after defining log().

# missing_paths DIR TEST PATH...: echo the PATHs under DIR that fail `test TEST`
# (-x for binaries, -f for files); return 1 if any is missing.
missing_paths() {
    local dir="$1" kind="$2" missing=()
    shift 2
    for p in "$@"; do
        test "$kind" "$dir/$p" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "${missing[*]}"
        return 1
    fi
}

# pin_check GOMOD MODULE VERSION: versions.env names the cache, the go.mod decides what
# is built; stop the build when they disagree.
pin_check() {
    local gomod="$1" module="$2" want="$3"
    grep -qE "^[[:space:]]*(require )?$module $want( |\$)" "$gomod" || {
        log "error: $gomod does not require $module $want (versions.env); update both together"
        exit 2
    }
}

# lock_set SET_DIR: create SET_DIR and hold its build lock (fd 9) for the rest of the
# script, waiting for another build of the same set to finish first.
lock_set() {
    mkdir -p "$1"
    exec 9>"$1/.lock"
    if ! flock -n 9; then
        log "another build of this set is running; waiting for it"
        flock 9
    fi
}
