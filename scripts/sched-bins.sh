#!/usr/bin/env bash
# Build what the scheduler tests (make sched-test, tests/sched/) run beside the cluster tests' control plane, from Go
# modules through the module proxy, into the per-user cache keyed by version (never committed; a warm cache makes
# this a no-op):
#   - the Kueue controller manager, sigs.k8s.io/kueue/cmd/kueue at KUEUE_VERSION: the release the platform installs
#     (components/data/versions.py KUEUE), run out of cluster with the stack's own rendered configuration. Its
#     go.mod has no replace directives, so `go install` builds it as released; it needs Go >= 1.26.
#   - helm, helm.sh/helm/v3/cmd/helm at HELM_VERSION: the Helm library the kubernetes provider the engine tests
#     build embeds (github.com/pulumi/pulumi-kubernetes/provider/v4's go.mod), to render the pinned Kueue chart
#     (upstream/charts) with the stack's values, as the provider would install it: the webhook configurations, the
#     Service and the manager configuration the controller runs with come from the chart, not from a copy.
#
#   scripts/sched-bins.sh            build what is missing, print the bin directory
#   scripts/sched-bins.sh --print    print the bin directory only (exit 1 if anything is missing)
set -euo pipefail

KUEUE_VERSION="${KUEUE_VERSION:-v0.19.2}"
HELM_VERSION="${HELM_VERSION:-v3.18.6}"
NAME=sched-bins
TOOLS=(kueue helm)
# shellcheck source=scripts/bins-cache.sh
. "$(dirname "$0")/bins-cache.sh"
BIN="$CACHE/bin/kueue-$KUEUE_VERSION-helm-$HELM_VERSION"
bins_cached "$@"

if [ ! -x "$BIN/kueue" ]; then
  echo "sched-bins: building kueue $KUEUE_VERSION (a first build takes minutes)" >&2
  # stamped as the release's own Makefile does (LD_FLAGS: pkg/version.GitVersion), so its log names the version
  GOBIN="$WORK/kueue" go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
    "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION"
  mv "$WORK/kueue/kueue" "$BIN/kueue"
fi

if [ ! -x "$BIN/helm" ]; then
  echo "sched-bins: building helm $HELM_VERSION" >&2
  GOBIN="$WORK/helm" go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mv "$WORK/helm/helm" "$BIN/helm"
fi

bins_complete
echo "$BIN"
