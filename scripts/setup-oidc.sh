#!/usr/bin/env bash
# Installs the npm package oidc-provider (pinned in e2e/oidc/package.json and
# package-lock.json) into .cache/oidc, for the end-to-end suite's real OpenID
# Connect provider. Idempotent: does nothing when the lockfile is unchanged.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/e2e/oidc"
dst="$root/.cache/oidc"
if ! command -v npm >/dev/null 2>&1; then
  echo "oidc: npm is missing (install Node.js 18 or newer)" >&2
  exit 1
fi
stamp="$dst/.lock.sha256"
want="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$dst/node_modules/oidc-provider" ]; then
  echo "oidc: cached"
  exit 0
fi
echo "oidc: installing oidc-provider into .cache/oidc"
mkdir -p "$dst"
cp "$src/package.json" "$src/package-lock.json" "$dst/"
# npm ci installs exactly the lockfile. The lockfile names no registry host
# (no "resolved" fields): npm then fetches from the configured registry.
(cd "$dst" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
echo "$want" >"$stamp"
