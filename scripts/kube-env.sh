#!/usr/bin/env bash
# Where scripts/setup-kube.sh puts kube-apiserver and helm: a cache outside the
# clone, shared by every clone on this machine. Sourced by the scripts; run it
# to print the variables (the e2e tests read the same defaults in e2e/kube.go).
KUBE_VERSION=v1.37.2
HELM_VERSION=v3.22.0
SPARKGATE_CACHE="${SPARKGATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sparkgate}"
SPARKGATE_KUBE_APISERVER="${SPARKGATE_KUBE_APISERVER:-$SPARKGATE_CACHE/kube/$KUBE_VERSION/kube-apiserver}"
SPARKGATE_HELM="${SPARKGATE_HELM:-$SPARKGATE_CACHE/helm/$HELM_VERSION/helm}"
export KUBE_VERSION HELM_VERSION SPARKGATE_CACHE SPARKGATE_KUBE_APISERVER SPARKGATE_HELM
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  printf 'SPARKGATE_KUBE_APISERVER=%s\nSPARKGATE_HELM=%s\n' "$SPARKGATE_KUBE_APISERVER" "$SPARKGATE_HELM"
fi
