#!/usr/bin/env bash
# Re-captures the real Spark pages used by TestStripperGolden.
#
#   proxy/testdata/capture/capture.sh <spark-version> <ui-port> [running-jobs]
#
# Starts driver.py (a FAIR-scheduled local driver with one finished job and
# one job that stays running) with the pyspark of .cache/spark/<version>,
# fetches its pages as the gateway would (X-Forwarded-Context set), and stops
# the driver. Then run: go test ./proxy -run StripperGolden -update
#
# With running-jobs (e.g. 20), the driver keeps that many jobs running and
# only its jobs page is fetched, as spark-<version>-jobs-kill<N>.html: a
# page with a kill control per running job.
set -euo pipefail
v=${1:?spark version, e.g. 3.5.9}
port=${2:-14791}
running=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$here/..
cd "$here"
"$root/.cache/spark/$v/venv/bin/python" driver.py "$port" ${running:+"$running"} > "driver-$v.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
app=
for _ in $(seq 120); do
  app=$(sed -n 's/^APPID //p' "driver-$v.log")
  if [[ -n $app ]] && curl -sf "http://127.0.0.1:$port/jobs/job/?id=1" -o /dev/null; then break; fi
  sleep 1
done
[[ -n $app ]] || { echo "driver did not start" >&2; exit 1; }
get() {
  curl -sf -H "X-Forwarded-Context: /app/$app" "http://127.0.0.1:$port$2" -o "$out/spark-$v-$1.html"
  # The call site names this script by its absolute path: keep the machine out.
  sed -i "s#$here/driver\.py#driver.py#g; s#${here//\//\\\\/}\\\\/driver\\.py#driver.py#g" "$out/spark-$v-$1.html"
}
if [[ -n $running ]]; then
  # Wait until every running job is listed (one kill control each).
  for _ in $(seq 60); do
    n=$(curl -sf "http://127.0.0.1:$port/api/v1/applications/$app/jobs?status=running" | grep -c '"jobId"' || true)
    [[ $n -ge $running ]] && break
    sleep 1
  done
  get "jobs-kill$running" /jobs/
  rm -f "driver-$v.log"
  exit 0
fi
get jobs /jobs/
get stages /stages/
get job1 '/jobs/job/?id=1'
get stage1 '/stages/stage/?id=1&attempt=0'
get pool '/stages/pool/?poolname=default'
get executors /executors/
rm -f "driver-$v.log"
