#!/usr/bin/env bash
# Installs what TestKubernetes and the Helm checks need:
#  - etcd (Debian's etcd-server; apt does not start it),
#  - kube-apiserver v1.37.2, built from the Go module proxy (no kubelet, no
#    container runtime: tests create pods through the API and patch their status),
#  - helm, installed with go install.
# The binaries go to a cache OUTSIDE the clone ($SPARKGATE_CACHE, default
# ~/.cache/sparkgate), so a fresh clone on a machine that built them before
# skips the 12-minute apiserver build. Idempotent: each step is skipped when
# its binary is there. scripts/kube-env.sh prints where they are.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/kube-env.sh
source "$root/scripts/kube-env.sh"

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

# etcd
if command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ]; then
  echo "kube: etcd present"
else
  echo "kube: installing etcd-server with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
  $sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends etcd-server >/dev/null
fi

# helm
if [ -x "$SPARKGATE_HELM" ]; then
  echo "kube: helm $HELM_VERSION cached"
else
  echo "kube: installing helm $HELM_VERSION"
  mkdir -p "$(dirname "$SPARKGATE_HELM")"
  GOBIN="$(dirname "$SPARKGATE_HELM")" GOFLAGS=-buildvcs=false \
    go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
fi

# kube-apiserver
if [ -x "$SPARKGATE_KUBE_APISERVER" ]; then
  echo "kube: kube-apiserver $KUBE_VERSION cached"
  exit 0
fi
echo "kube: building kube-apiserver $KUBE_VERSION (about 12 minutes on 2 cores)"
dir="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
  echo "kube: go mod download k8s.io/kubernetes@$KUBE_VERSION failed" >&2
  exit 1
fi
out="$(dirname "$SPARKGATE_KUBE_APISERVER")"
mkdir -p "$out"
work="$(mktemp -d "$out/src.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -r "$dir/." "$work/"
chmod -R u+w "$work"
cd "$work"
rm -rf go.work go.work.sum vendor
# The module's replaces point at ./staging; the staging modules are published
# as k8s.io/<name>@v0.<minor>.<patch>, so use those instead.
staging="v0.${KUBE_VERSION#v1.}"
replaced="$(awk '/^replace \(/{r=1;next} r&&/^\)/{r=0} r&&/=>/{print $1}' go.mod)"
args=()
for mod in $replaced; do
  args+=("-dropreplace=$mod")
  if grep -qE "^[[:space:]]+$mod v0\.0\.0$" go.mod; then
    args+=("-require=$mod@$staging")
  fi
done
go mod edit "${args[@]}"
pkg=k8s.io/component-base/version
minor="${KUBE_VERSION#v1.}"
minor="${minor%%.*}"
GOFLAGS="-mod=mod -buildvcs=false" go build -trimpath -o "$work/kube-apiserver" \
  -ldflags "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor" \
  ./cmd/kube-apiserver
mv "$work/kube-apiserver" "$SPARKGATE_KUBE_APISERVER"
echo "kube: built $SPARKGATE_KUBE_APISERVER"
