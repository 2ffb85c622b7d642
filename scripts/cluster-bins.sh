#!/usr/bin/env bash
# Build the real control plane the cluster tests run against, from Go modules through the module proxy, into a
# per-user cache keyed by version. Nothing built here is committed; a warm cache makes this a no-op.
#
#   scripts/cluster-bins.sh            build what is missing, print the bin directory
#   scripts/cluster-bins.sh --print    print the bin directory only (exit 1 if anything is missing)
#
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl come from k8s.io/kubernetes, which is not meant to be
# consumed as a module on its own: its go.mod requires every staging module (k8s.io/api, k8s.io/apiserver, ...)
# at v0.0.0 and replaces it with ./staging/src/.... A throw-away wrapper module requires k8s.io/kubernetes at
# the release and replaces each staging module with its published v0.<minor>.<patch> release (the usual way to
# import k8s.io/kubernetes; the list is read from the release's own go.mod, so it follows the release).
# etcd is built through go.etcd.io/etcd/server/v3/etcdmain, the package etcd's own main() calls.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.35.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
NAME=cluster-bins
TOOLS=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)
# shellcheck source=scripts/bins-cache.sh
. "$(dirname "$0")/bins-cache.sh"
BIN="$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
bins_cached "$@"
minor="${K8S_VERSION#v1.}"        # 35.4
staging="v0.$minor"               # v0.35.4

# --- kube-apiserver, kube-controller-manager, kubectl ------------------------------------------------------
mkdir -p "$WORK/k8s"
cd "$WORK/k8s"
go mod download -json "k8s.io/kubernetes@$K8S_VERSION" > dl.json
gomod="$(sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p' dl.json)"
{
  echo "module gpu-platform.local/controlplane"
  echo
  echo "go 1.25"
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  echo "replace ("
  # every "k8s.io/x => ./staging/src/k8s.io/x" of the release's go.mod, pointed at the published release
  sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$gomod"
  echo ")"
} > go.mod
cat > tools.go <<'EOF'
//go:build tools

package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF
go mod tidy -e >/dev/null 2>&1 || true
ver="k8s.io/component-base/version"
commit="$(sed -n 's/^\s*"Hash": "\(.*\)",\?$/\1/p' dl.json | head -1)"
ldflags="-s -w -X $ver.gitVersion=$K8S_VERSION -X $ver.gitMajor=1 -X $ver.gitMinor=${minor%%.*} \
 -X $ver.gitCommit=$commit -X $ver.gitTreeState=clean -X $ver.buildDate=1970-01-01T00:00:00Z"
for t in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  [ -x "$BIN/$t" ] && continue
  echo "cluster-bins: building $t $K8S_VERSION (a first build takes minutes)" >&2
  go build -trimpath -ldflags "$ldflags" -o "$BIN/$t.tmp" "k8s.io/kubernetes/cmd/$t"
  mv "$BIN/$t.tmp" "$BIN/$t"
done

# --- etcd ---------------------------------------------------------------------------------------------------
if [ ! -x "$BIN/etcd" ]; then
  echo "cluster-bins: building etcd $ETCD_VERSION" >&2
  mkdir -p "$WORK/etcd"
  cd "$WORK/etcd"
  cat > go.mod <<EOF
module gpu-platform.local/etcd

go 1.25

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
EOF
  cat > main.go <<'EOF'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
  go mod tidy >/dev/null 2>&1
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" .
  mv "$BIN/etcd.tmp" "$BIN/etcd"
fi

# --- kwok: simulated nodes and pods (sigs.k8s.io/kwok; a module with no replace directives, so go install) ----
if [ ! -x "$BIN/kwok" ]; then
  echo "cluster-bins: building kwok $KWOK_VERSION" >&2
  GOBIN="$WORK/kwok" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  # kwok runs no stage it is not given: keep the module's "fast" stages (a node turns Ready and reports a
  # heartbeat in its status every 20-25 s, inside the node lifecycle controller's 40 s grace period; a pod turns
  # Ready, a Job's pod Succeeded, a deleted pod goes) beside the binary. Not the lease heartbeat: kwok renews
  # leases only with --node-lease-duration-seconds, and without either the nodes turn NotReady after 40 s and
  # their pods lose Ready for good (kwok's pod-ready stage acts on Pending pods only).
  src="$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
  rm -rf "$BIN/kwok-stages" && mkdir -p "$BIN/kwok-stages"
  cp "$src/node/fast/node-initialize.yaml" "$src/node/heartbeat/node-heartbeat.yaml" \
     "$src/pod/fast/pod-ready.yaml" "$src/pod/fast/pod-complete.yaml" "$src/pod/fast/pod-delete.yaml" \
     "$BIN/kwok-stages/"
  mv "$WORK/kwok/kwok" "$BIN/kwok"
fi

bins_complete
echo "$BIN"
