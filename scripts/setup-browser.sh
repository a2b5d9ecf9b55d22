#!/usr/bin/env bash
# Makes sure a headless-capable Chromium is at /usr/bin/chromium (Debian's
# package) for the end-to-end suite's browser tests. Idempotent.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "browser: chromium present"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "browser: installing chromium with apt-get"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=900 update -qq >/dev/null
$sudo apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends chromium >/dev/null
