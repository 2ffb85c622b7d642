# Sourced by scripts/cluster-bins.sh and scripts/engine-bins.sh: the per-user cache of binaries built from Go
# modules, and the `--print` / already-built short cuts. The caller sets NAME (for messages), BIN (the cache
# folder, keyed by version) and TOOLS (the binaries it must hold), then calls bins_cached "$@".

CACHE="${GPU_PLATFORM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-platform}"

bins_complete() {
  for t in "${TOOLS[@]}"; do [ -x "$BIN/$t" ] || return 1; done
}

# Prints BIN and exits when everything is built; with --print, fails when something is missing. Otherwise
# checks for Go and returns, with WORK a scratch folder removed on exit and Go set for static, reproducible builds.
bins_cached() {
  if [ "${1:-}" = "--print" ]; then
    bins_complete || { echo "$NAME: $BIN is incomplete; run scripts/$NAME.sh" >&2; exit 1; }
    echo "$BIN"
    exit 0
  fi
  if bins_complete; then
    echo "$BIN"
    exit 0
  fi
  command -v go >/dev/null || { echo "$NAME: Go is needed to build these (https://go.dev/doc/install)" >&2; exit 1; }
  mkdir -p "$BIN"
  WORK="$(mktemp -d)"
  trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT
  export GOFLAGS="-buildvcs=false -mod=mod" CGO_ENABLED=0
}
