#!/usr/bin/env bash
# Installs Apache Spark from the pyspark package (it ships the whole distribution:
# jars, bin/spark-submit, bin/spark-class) into .cache/spark/<version>, once.
# Prints nothing but progress; idempotent.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
versions="${SPARK_VERSIONS:-3.5.9 4.0.5 4.3.0}"
for v in $versions; do
  dir="$root/.cache/spark/$v"
  if [ -x "$dir/venv/bin/python" ] && [ -f "$dir/.done" ]; then
    echo "spark $v: cached"
    continue
  fi
  echo "spark $v: installing pyspark==$v into .cache/spark/$v"
  rm -rf "$dir"
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "pyspark==$v"
  touch "$dir/.done"
done
