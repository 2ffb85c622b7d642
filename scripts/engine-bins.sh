#!/usr/bin/env bash
# Build the real Pulumi engine the engine tests run through, from Go modules through the module proxy, into a
# per-user cache keyed by version (never committed; a warm cache makes this a no-op):
#   - the Pulumi CLI from github.com/pulumi/pulumi/pkg/v3 (cmd/pulumi) at PULUMI_VERSION, the release the
#     Python SDK in requirements/dev.txt is tested against (the CLI speaks the same protocol to older SDKs);
#   - the kubernetes resource provider plugin from github.com/pulumi/pulumi-kubernetes/provider/v4.
#
# The provider: the proxy serves provider/v4 only as a pseudo-version (KUBERNETES_PROVIDER_MODULE_VERSION, a
# commit of 2026-01-15 on the v4 line); its tagged releases live under a path the proxy does not list. The
# module as published lacks two generated files (cmd/pulumi-resource-kubernetes/schema-embed.json and
# terraform-mapping-embed.json: `go generate` output, git-ignored upstream) and replaces the sdk/v4 module with
# ../sdk, which is outside the module: so it is copied, the sdk replace pointed at the published sdk/v4 release
# its go.mod requires (a newer one would pull a newer pulumi/sdk than its pulumi/pkg compiles with), and the
# repository's own generate.go run (as its Makefile does) before the build. The binary reports
# KUBERNETES_PROVIDER_VERSION, the version the pulumi-kubernetes Python SDK in the lock registers resources with,
# so the engine picks this plugin for them.
#
#   scripts/engine-bins.sh            build what is missing, print the bin directory
#   scripts/engine-bins.sh --print    print the bin directory only (exit 1 if anything is missing)
set -euo pipefail

PULUMI_VERSION="${PULUMI_VERSION:-v3.274.1}"
KUBERNETES_PROVIDER_MODULE_VERSION="${KUBERNETES_PROVIDER_MODULE_VERSION:-v4.0.0-20260115033456-f47bc2d6f199}"
KUBERNETES_PROVIDER_VERSION="${KUBERNETES_PROVIDER_VERSION:-4.34.2}"
NAME=engine-bins
TOOLS=(pulumi pulumi-resource-kubernetes)
# shellcheck source=scripts/bins-cache.sh
. "$(dirname "$0")/bins-cache.sh"
BIN="$CACHE/bin/pulumi-$PULUMI_VERSION-kubernetes-$KUBERNETES_PROVIDER_VERSION"
bins_cached "$@"

# --- the Pulumi CLI -----------------------------------------------------------------------------------------
if [ ! -x "$BIN/pulumi" ]; then
  echo "engine-bins: building pulumi $PULUMI_VERSION (a first build takes minutes)" >&2
  mkdir -p "$WORK/cli" && cd "$WORK/cli"
  printf 'module gpu-platform.local/pulumi\n\ngo 1.25\n\nrequire github.com/pulumi/pulumi/pkg/v3 %s\n' "$PULUMI_VERSION" > go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"\n' > tools.go
  go mod tidy -e >/dev/null 2>&1 || true
  go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
    -o "$BIN/pulumi.tmp" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  mv "$BIN/pulumi.tmp" "$BIN/pulumi"
fi

# --- the kubernetes provider plugin -----------------------------------------------------------------------------
if [ ! -x "$BIN/pulumi-resource-kubernetes" ]; then
  echo "engine-bins: building pulumi-resource-kubernetes $KUBERNETES_PROVIDER_VERSION (module $KUBERNETES_PROVIDER_MODULE_VERSION)" >&2
  mod="github.com/pulumi/pulumi-kubernetes/provider/v4@$KUBERNETES_PROVIDER_MODULE_VERSION"
  dir="$(go mod download -json "$mod" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')"
  cp -r "$dir" "$WORK/provider" && chmod -R u+w "$WORK/provider"
  cd "$WORK/provider"
  sdk="$(sed -n 's#^\s*github.com/pulumi/pulumi-kubernetes/sdk/v4 \(v[^ ]*\)$#\1#p' go.mod | head -1)"
  sed -i "s#^replace github.com/pulumi/pulumi-kubernetes/sdk/v4 => ../sdk#replace github.com/pulumi/pulumi-kubernetes/sdk/v4 => github.com/pulumi/pulumi-kubernetes/sdk/v4 $sdk#" go.mod
  (cd cmd/pulumi-resource-kubernetes && VERSION="$KUBERNETES_PROVIDER_VERSION" go run generate.go)
  go build -trimpath \
    -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$KUBERNETES_PROVIDER_VERSION" \
    -o "$BIN/pulumi-resource-kubernetes.tmp" ./cmd/pulumi-resource-kubernetes
  mv "$BIN/pulumi-resource-kubernetes.tmp" "$BIN/pulumi-resource-kubernetes"
fi

bins_complete
echo "$BIN"
