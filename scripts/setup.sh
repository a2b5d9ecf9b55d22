#!/usr/bin/env bash
# Installs everything the end-to-end suite needs: Spark (3.5.9, 4.0.5 and 4.3.0 from
# pyspark), Chromium, the OIDC provider and Hadoop's minicluster (YARN),
# redis-server and nginx (replicas), etcd, kube-apiserver and helm (outside the
# clone, see scripts/kube-env.sh), and buildah and podman.
# Each step is idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/setup-spark.sh"
"$here/setup-browser.sh"
"$here/setup-oidc.sh"
"$here/setup-yarn.sh"
"$here/setup-replicas.sh"
"$here/setup-kube.sh"
"$here/setup-image.sh"
