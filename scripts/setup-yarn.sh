#!/usr/bin/env bash
# Installs the one-node YARN cluster of the end-to-end suite (TestYARN):
# copies Hadoop's minicluster jars (pinned in e2e/yarn/pom.xml) from the
# configured Maven repositories into .cache/yarn/lib with mvn, and compiles
# e2e/yarn/MiniYarn.java into .cache/yarn/classes with javac. Idempotent:
# does nothing when the pom and the source are unchanged.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
src="$root/e2e/yarn"
dst="$root/.cache/yarn"
for tool in mvn javac java; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "yarn: $tool is missing (install Maven and a JDK 17)" >&2
    exit 1
  fi
done
stamp="$dst/.inputs.sha256"
want="$(cat "$src/pom.xml" "$src/MiniYarn.java" | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$dst/classes/MiniYarn.class" ]; then
  echo "yarn: cached"
  exit 0
fi
echo "yarn: copying Hadoop's minicluster into .cache/yarn"
rm -rf "$dst/lib" "$dst/classes"
mkdir -p "$dst/lib" "$dst/classes"
log="$dst/mvn.log"
if ! mvn -q -B -f "$src/pom.xml" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$dst/lib" >"$log" 2>&1; then
  cat "$log" >&2
  echo "yarn: mvn failed" >&2
  exit 1
fi
javac -cp "$dst/lib/*" -d "$dst/classes" "$src/MiniYarn.java"
echo "$want" >"$stamp"
