#!/usr/bin/env bash
# Installs Debian's buildah, podman and runc for TestImage, which builds a
# FROM scratch image of the static gateway binary and runs it (no registry
# is needed: nothing is pulled). runc, not Debian's default crun: crun
# refuses hosts with hybrid cgroups. Idempotent.
set -euo pipefail
if command -v buildah >/dev/null 2>&1 && command -v podman >/dev/null 2>&1 && command -v runc >/dev/null 2>&1; then
  echo "image: buildah, podman and runc present"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "image: installing buildah, podman and runc with apt-get"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
$sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends \
  buildah podman runc fuse-overlayfs >/dev/null
