#!/usr/bin/env bash
# Installs what the replica tests need: Debian's redis-server (the shared
# session store of auth's store tests and of e2e TestReplicas) and nginx (the
# load balancer in front of TestReplicas' three gateways). The tests start
# their own servers on free loopback ports; nothing here relies on the
# packages' own services being started. Idempotent.
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || need+=(redis-server)
[ -x /usr/sbin/nginx ] || need+=(nginx)
if [ ${#need[@]} -eq 0 ]; then
  echo "replicas: redis-server and nginx present"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "replicas: installing ${need[*]} with apt-get"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
$sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
