#!/usr/bin/env bash
# Installs everything the end-to-end suite needs: Spark (3.5.9, 4.0.5 and 4.3.0 from
# pyspark), Chromium, the OIDC provider and Hadoop's minicluster (YARN),
# redis-server and nginx (replicas), etcd, kube-apiserver and helm (outside the
# clone, see scripts/kube-env.sh), and buildah and podman.
# Each step is idempotent.
#
# The steps that only download into .cache (Spark, the OIDC provider, YARN's
# jars: network, little CPU) run alongside the others, whose apt-get installs
# take dpkg's lock one after another and whose kube-apiserver build takes the
# cores for minutes: on a new machine the downloads then add no time of their
# own. Their output follows the others'; any step failing fails the setup, once
# every step has ended.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

background=(spark oidc yarn)
pids=()
for step in "${background[@]}"; do
  "$here/setup-$step.sh" >"$logs/$step.log" 2>&1 &
  pids+=("$!")
done
echo "setup: ${background[*]} run alongside; their output follows"

status=0
"$here/setup-browser.sh" &&
  "$here/setup-replicas.sh" &&
  "$here/setup-kube.sh" &&
  "$here/setup-image.sh" ||
  status=$?

for i in "${!background[@]}"; do
  step="${background[$i]}"
  if wait "${pids[$i]}"; then
    cat "$logs/$step.log"
  else
    status=1
    cat "$logs/$step.log" >&2
    echo "setup: setup-$step.sh failed" >&2
  fi
done
exit "$status"
