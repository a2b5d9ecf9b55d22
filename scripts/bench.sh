#!/usr/bin/env bash
# Benchmarks of sparkgate (make bench): wrk load on loopback against a fast
# static Spark UI and a real Spark driver, directly and through sparkgate;
# sparkgate's authentication overhead; sparkgate against oauth2-proxy, both
# signed in through the same real OpenID provider (e2e/oidc); peak RSS; the
# Go benchmarks; the stripper's memory on a 50 MiB page. Every figure is
# reported with its ratio to a baseline measured in the same run, because
# absolute numbers on a shared machine are noise.
#
# Writes bench/out/report.md (and the raw output beside it) and prints the
# report. Every load is bounded in time and runs on 127.0.0.1 only; every
# process started here is stopped on exit.
#
# Environment: BENCH_DURATION (wrk run, default 5s), BENCH_THREADS (2),
# BENCH_CONNECTIONS (50), BENCH_ROUNDS (rounds of the side-by-side table,
# 5), BENCH_RUNNING_JOBS (running jobs on the driver's kill page, 20),
# BENCH_FIT_JOBS (running jobs on the driver's kill page that fits Jetty's
# 32 KiB buffer and so comes with its length, 4),
# BENCH_SPARK (Spark version under .cache/spark, default 3.5.9), BENCH_GO
# (1 runs the Go benchmarks, default 1), BENCH_SCALE (1 runs the scale
# program, default 1), BENCH_USERS (distinct sessions of the many-users
# load, 1000; 0 skips it), BENCH_USERS_DURATION (60s), BENCH_SG_CGROUP (a
# cgroup directory the OIDC sparkgate is started in, to measure it, the
# many-users load above all, under a container's memory limit; default
# none).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

duration="${BENCH_DURATION:-5s}"
threads="${BENCH_THREADS:-2}"
conns="${BENCH_CONNECTIONS:-50}"
rounds="${BENCH_ROUNDS:-5}"
running_jobs="${BENCH_RUNNING_JOBS:-20}"
fit_jobs="${BENCH_FIT_JOBS:-4}"
users="${BENCH_USERS:-1000}"
users_duration="${BENCH_USERS_DURATION:-60s}"
run_scale="${BENCH_SCALE:-1}"
spark_version="${BENCH_SPARK:-3.5.9}"
run_go="${BENCH_GO:-1}"
sg_cgroup="${BENCH_SG_CGROUP:-}"
o2p_version="v7.15.6"
static_id="local-1700000000001" # the static upstream's app id, distinct from the driver's

out="bench/out"
rm -rf "$out"
mkdir -p "$out/wrk" "$out/logs" "$out/bin" "$out/capture" "$out/conf"
chmod 700 "$out/conf"
figures="$out/figures.tsv"
meta="$out/meta.tsv"
: >"$figures"
: >"$meta"

log() { printf 'bench: %s\n' "$*" >&2; }
note() { printf '%s\t%s\n' "$1" "$2" >>"$meta"; }

# --- processes -------------------------------------------------------------
pids=()
stop_file="$out/driver.stop"
run_file="$out/driver.run"
last_pid=""
start_bg() { # start_bg NAME CMD... : runs CMD with output in logs/NAME.log
  local name="$1"
  shift
  "$@" >"$out/logs/$name.log" 2>&1 &
  last_pid=$!
  pids+=("$last_pid")
}
stop_pid() { # stop_pid PID : TERM, then KILL after 5 s
  local pid="$1" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}
driver_pid=""
stop_all() {
  touch "$stop_file" 2>/dev/null || true
  local pid i
  # The driver stops itself (spark.stop()) when it sees the stop file.
  if [ -n "$driver_pid" ]; then
    for i in $(seq 100); do kill -0 "$driver_pid" 2>/dev/null || break; sleep 0.1; done
  fi
  for pid in "${pids[@]}"; do stop_pid "$pid"; done
  pids=()
}
trap stop_all EXIT

wait_log() { # wait_log FILE REGEX SECONDS PID : until FILE matches REGEX
  local file="$1" re="$2" secs="$3" pid="$4" i
  for i in $(seq $((secs * 5))); do
    grep -Eq "$re" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { log "process $pid exited; tail of $file:"; tail -20 "$file" >&2; return 1; }
    sleep 0.2
  done
  log "timed out waiting for /$re/ in $file"
  tail -20 "$file" >&2
  return 1
}
wait_http() { # wait_http URL SECONDS [CURL ARGS...] : until URL answers 200
  local url="$1" secs="$2" i
  shift 2
  for i in $(seq $((secs * 5))); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$url" || true)" = 200 ] && return 0
    sleep 0.2
  done
  log "timed out waiting for 200 from $url"
  return 1
}
rss() { # rss PID KEY NAME : VmHWM or VmRSS of PID into figures
  local kb
  kb="$(awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status" 2>/dev/null || true)"
  [ -n "$kb" ] && printf '%s\t%s\tkB\n' "$3" "$kb" >>"$figures"
  return 0
}

clk_tck="$(getconf CLK_TCK)"
cpu_ticks() { # cpu_ticks PID... : their user and system clock ticks, summed
  local p sum=0
  for p in "$@"; do
    # The fields after "pid (comm) ": utime and stime are the 12th and 13th.
    sum=$((sum + $(awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$sum"
}

# run_wrk NAME URL EXPECT [wrk args...] : a bounded warm-up, then the
# measured run; EXPECT is the status one curl must get first, so that a
# broken sign-in is not measured as a fast error page. With CPU_PIDS set
# (the processes under test), their CPU time during the measured run is
# appended as "# cpu_us N".
run_wrk() {
  local name="$1" url="$2" expect="$3"
  shift 3
  local hdr=() code
  if [ $# -gt 0 ]; then hdr=("$@"); fi
  code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "${hdr[@]}" "$url" || true)"
  if [ "$code" != "$expect" ]; then
    log "$name: $url answered $code; want $expect; not measured"
    printf '# url %s\nprecheck: status %s, want %s\n' "$url" "$code" "$expect" >"$out/wrk/$name.txt"
    return 0
  fi
  wrk -t1 -c"$conns" -d1s "${hdr[@]}" "$url" >/dev/null 2>&1 || true
  log "$name: wrk -t$threads -c$conns -d$duration $url"
  local cpu0=""
  if [ -n "${CPU_PIDS:-}" ]; then
    # shellcheck disable=SC2086 # a list of pids
    cpu0="$(cpu_ticks $CPU_PIDS)"
  fi
  {
    printf '# url %s\n' "$url"
    wrk -t"$threads" -c"$conns" -d"$duration" --timeout 5s --latency "${hdr[@]}" "$url" 2>&1 || true
    if [ -n "$cpu0" ]; then
      # shellcheck disable=SC2086
      printf '# cpu_us %s\n' "$((($(cpu_ticks $CPU_PIDS) - cpu0) * 1000000 / clk_tck))"
    fi
  } >"$out/wrk/$name.txt"
  grep -E 'Requests/sec|99%' "$out/wrk/$name.txt" | tr -s ' ' | paste -sd' ' | sed "s/^/bench:   /" >&2
}

# size NAME URL [curl args...] : the bytes of one answer into figures
size() {
  local name="$1" url="$2" n
  shift 2
  n="$(curl -s -o /dev/null -w '%{size_download}' --max-time 10 "$@" "$url" || true)"
  [ -n "$n" ] && printf '%s\t%s\tbytes\n' "$name" "$n" >>"$figures"
  return 0
}

# --- prerequisites -------------------------------------------------------
started="$(date +%s)"
if ! command -v wrk >/dev/null; then
  log "installing wrk"
  if [ "$(id -u)" = 0 ]; then apt-get install -y wrk >/dev/null; else sudo apt-get install -y wrk >/dev/null; fi
fi
[ -x bin/sparkgate ] || make build
have_oidc=1
scripts/setup-oidc.sh >&2 || { log "no OIDC provider: oauth2-proxy comparison skipped"; have_oidc=0; }
# oauth2-proxy is built once into .cache/bin (shared by worktrees), else bin/.
o2p_dir="$root/bin"
[ -d .cache ] && o2p_dir="$(cd .cache && pwd -P)/bin"
o2p_bin="$o2p_dir/oauth2-proxy"
if [ "$have_oidc" = 1 ] && ! go version -m "$o2p_bin" 2>/dev/null | grep -q "oauth2-proxy/v7[[:space:]]*$o2p_version"; then
  log "installing oauth2-proxy $o2p_version into $o2p_dir"
  mkdir -p "$o2p_dir"
  GOBIN="$o2p_dir" go install "github.com/oauth2-proxy/oauth2-proxy/v7@$o2p_version"
fi
venv=".cache/spark/$spark_version/venv"
pyspark_home="$venv/lib/python3.11/site-packages/pyspark"
have_spark=1
# Like wrk, the driver's Spark is installed when missing: without it the
# report would lack the rows of the pages a real driver sends.
[ -x "$venv/bin/spark-submit" ] || SPARK_VERSIONS="$spark_version" scripts/setup-spark.sh >&2 ||
  log "installing Spark $spark_version failed"
[ -x "$venv/bin/spark-submit" ] || { log "no Spark $spark_version in $venv (scripts/setup-spark.sh): real-driver runs skipped"; have_spark=0; }

# The driver takes ~10 s to start: start it first, build meanwhile.
if [ "$have_spark" = 1 ]; then
  start_bg driver env PYSPARK_PYTHON="$root/$venv/bin/python" PYSPARK_DRIVER_PYTHON="$root/$venv/bin/python" \
    SPARK_HOME="$root/$pyspark_home" \
    "$venv/bin/spark-submit" --master 'local[2]' \
    --conf spark.ui.port=0 --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 \
    --conf spark.ui.showConsoleProgress=false \
    bench/spark/driver.py --stop-file "$stop_file" --max-seconds 600 --run-file "$run_file" --running "$running_jobs"
  driver_pid="$last_pid"
fi
go build -o "$out/bin/" ./bench/cmd/...
B="$out/bin"

note "date" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
note "machine" "$(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), shared with other work; load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
note "versions" "sparkgate $(git describe --always --dirty 2>/dev/null || echo dev), $(go version | cut -d' ' -f3), oauth2-proxy $o2p_version, Spark $spark_version, $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
note "wrk" "$threads threads, $conns connections, $duration per run after a 1 s warm-up, 127.0.0.1"

read -r sg_port sgo_port o2p_port oidc_port ngx_port sgo_metrics_port < <("$B/freeport" -n 6 | paste -sd' ')

# --- upstreams -------------------------------------------------------------
driver_url="" driver_id=""
if [ "$have_spark" = 1 ] && wait_log "$out/logs/driver.log" 'BENCH ready' 120 "$driver_pid"; then
  line="$(grep -m1 'BENCH ready' "$out/logs/driver.log")"
  driver_id="$(sed -E 's/.*app_id=([^ ]+).*/\1/' <<<"$line")"
  driver_url="$(sed -E 's/.*ui=([^ ]+).*/\1/' <<<"$line")"
  log "driver $driver_id at $driver_url"
  c="$out/capture"
  # A loaded machine can make a cold driver slow: retry, and name what failed.
  get() { curl -sSf --retry 3 --retry-all-errors --max-time 20 -D "$c/$1.headers" -o "$c/$1" "$driver_url$2" 2>>"$out/logs/capture.log" || { log "capture of $2 failed"; return 1; }; }
  get jobs.html /jobs/ &&
    get applications.json /api/v1/applications &&
    get environment.json "/api/v1/applications/$driver_id/environment" &&
    get jobs.json "/api/v1/applications/$driver_id/jobs" ||
    { log "capture from the driver failed; the static upstream serves proxy/testdata"; rm -f "$c"/*; }
  # The same driver with jobs running: its jobs page holds a kill control
  # per job. With a few, the page fits Jetty's buffer and comes with its
  # length; with many, chunked. The run file is replaced whole, so the
  # driver never reads it empty.
  want_jobs() { echo "$1" >"$run_file.tmp" && mv "$run_file.tmp" "$run_file"; }
  if [ "$fit_jobs" -lt "$running_jobs" ]; then
    want_jobs "$fit_jobs"
    if wait_log "$out/logs/driver.log" "BENCH running jobs=$fit_jobs\$" 60 "$driver_pid"; then
      get jobs-kill-fit.html /jobs/ || rm -f "$c/jobs-kill-fit.html"
    fi
  fi
  want_jobs "$running_jobs"
  if wait_log "$out/logs/driver.log" "BENCH running jobs=$running_jobs\$" 60 "$driver_pid"; then
    get jobs-kill.html /jobs/ || rm -f "$c/jobs-kill.html"
  fi
fi
# kills FILE : the kill controls in a Spark page (kill anchors and forms)
kills() { grep -oE '(href|action)="[^"]*/kill/' "$1" | wc -l; }
# sent_as FILE : how the driver sent a captured page (its Content-Length or chunked)
sent_as() {
  [ -s "$1.headers" ] || return 0
  local h
  h="$(grep -iE '^(content-length|transfer-encoding):' "$1.headers" | tr -d '\r' | paste -sd' ')"
  printf '; the driver sent it with %s' "${h:-neither length nor chunks}"
}
nokill_page="$out/capture/jobs.html" nokill_what="/jobs/ captured from the Spark $spark_version driver of this run, its jobs finished"
[ -s "$nokill_page" ] || { nokill_page=proxy/testdata/spark-3.5.9-stage1.html nokill_what="proxy/testdata/spark-3.5.9-stage1.html"; }
kill_page="$out/capture/jobs-kill.html" kill_what="/jobs/ captured from the same driver with $running_jobs jobs running"
[ -s "$kill_page" ] || { kill_page=proxy/testdata/spark-3.5.9-jobs-kill20.html kill_what="proxy/testdata/spark-3.5.9-jobs-kill20.html (a real 3.5.9 driver, 20 jobs running)"; }
note "static page (no kill control)" "$nokill_what, $(wc -c <"$nokill_page") bytes, $(kills "$nokill_page") kill controls; served at /jobs/"
note "static page (kill controls)" "$kill_what, $(wc -c <"$kill_page") bytes, $(kills "$kill_page") kill controls$(sent_as "$kill_page"); served at /running/jobs/ as a driver's Jetty sends a page longer than its 32 KiB buffer (chunked, a buffer at a time), and at /running/jobs/length/ with its length (which Spark never sends for a page that long)"
fit_page="$out/capture/jobs-kill-fit.html" fit_what="/jobs/ captured from the same driver with $fit_jobs jobs running"
[ -s "$fit_page" ] || { fit_page=proxy/testdata/spark-3.5.9-jobs.html fit_what="proxy/testdata/spark-3.5.9-jobs.html (a real 3.5.9 driver, 1 job running)"; }
note "static page (kill controls, fits)" "$fit_what, $(wc -c <"$fit_page") bytes, $(kills "$fit_page") kill controls$(sent_as "$fit_page"); served at /running/fit/jobs/ as Jetty sends a page that fits its buffer: with its length"
note "static REST JSON" "one job of /api/v1/applications/<id>/jobs/0, 200 bytes (bench/cmd/sparkstatic)"

start_bg sparkstatic "$B/sparkstatic" -dir "$out/capture" -jobs-html "$nokill_page" -kill-html "$kill_page" -kill-fit-html "$fit_page" -id "$static_id"
static_pid="$last_pid"
wait_log "$out/logs/sparkstatic.log" 'url=' 10 "$static_pid"
static_url="$(sed -n 's/.*url=//p' "$out/logs/sparkstatic.log")"

# --- sparkgate, local mode ---------------------------------------------------
sg="http://127.0.0.1:$sg_port"
{
  echo "listen: 127.0.0.1:$sg_port"
  echo "auth: {mode: local}"
  echo "discovery:"
  echo "  interval: 2s"
  echo "  static:"
  echo "    - $static_url"
  [ -n "$driver_url" ] && echo "    - $driver_url"
} >"$out/conf/sparkgate-local.yaml"
start_bg sparkgate bin/sparkgate -config "$out/conf/sparkgate-local.yaml"
sg_pid="$last_pid"
wait_log "$out/logs/sparkgate.log" 'oauth2/token\?token=' 20 "$sg_pid"
token_url="$(grep -Eom1 'http://[^ ]+/oauth2/token\?token=[0-9a-f]+' "$out/logs/sparkgate.log")"
cookie="$("$B/login" -start "$token_url" -cookie _sparkgate_session)"
H=(-H "Cookie: $cookie")
wait_http "$sg/app/$static_id/jobs/" 30 "${H[@]}"
[ -n "$driver_id" ] && wait_http "$sg/app/$driver_id/jobs/" 30 "${H[@]}"
rss "$sg_pid" VmHWM rss.sparkgate.start.vmhwm

# a. static upstream, direct vs through sparkgate
run_wrk static-direct "$static_url/jobs/" 200
CPU_PIDS="$sg_pid" run_wrk static-gateway "$sg/app/$static_id/jobs/" 200 "${H[@]}"
# ... for a client that accepts gzip (proxy.compress, on by default)
GZ=(-H "Accept-Encoding: gzip")
CPU_PIDS="$sg_pid" run_wrk static-gateway-gzip "$sg/app/$static_id/jobs/" 200 "${H[@]}" "${GZ[@]}"
size bytes.static-gateway.plain "$sg/app/$static_id/jobs/" "${H[@]}"
size bytes.static-gateway.gzip "$sg/app/$static_id/jobs/" "${H[@]}" "${GZ[@]}"
# ... and its REST JSON, which the stripper does not touch
run_wrk static-api-direct "$static_url/api/v1/applications/$static_id/jobs" 200
CPU_PIDS="$sg_pid" run_wrk static-api-gateway "$sg/api/v1/applications/$static_id/jobs" 200 "${H[@]}"
# b. real driver, direct vs through sparkgate
if [ -n "$driver_id" ]; then
  # A cold JVM is slower than a warm one: warm the driver's pages (bounded)
  # so that the first measured run is not penalised.
  log "warming the driver for 5 s"
  wrk -t1 -c8 -d3s "$driver_url/jobs/" >/dev/null 2>&1 || true
  wrk -t1 -c8 -d2s "$driver_url/api/v1/applications/$driver_id/jobs" >/dev/null 2>&1 || true
  run_wrk driver-jobs-direct "$driver_url/jobs/" 200
  CPU_PIDS="$sg_pid" run_wrk driver-jobs-gateway "$sg/app/$driver_id/jobs/" 200 "${H[@]}"
  # Both compressing: Spark's Jetty for a client that accepts gzip, and
  # sparkgate for its client (it asks the driver for plain bytes).
  run_wrk driver-jobs-direct-gzip "$driver_url/jobs/" 200 "${GZ[@]}"
  CPU_PIDS="$sg_pid" run_wrk driver-jobs-gateway-gzip "$sg/app/$driver_id/jobs/" 200 "${H[@]}" "${GZ[@]}"
  size bytes.driver-jobs.direct.gzip "$driver_url/jobs/" "${GZ[@]}"
  size bytes.driver-jobs.gateway.gzip "$sg/app/$driver_id/jobs/" "${H[@]}" "${GZ[@]}"
  run_wrk driver-api-direct "$driver_url/api/v1/applications/$driver_id/jobs" 200
  CPU_PIDS="$sg_pid" run_wrk driver-api-gateway "$sg/api/v1/applications/$driver_id/jobs" 200 "${H[@]}"
  touch "$stop_file" # the driver's JVM is not needed any more
fi
# c. authentication overhead: no session (a sign-in challenge), health
code="$(curl -s -o /dev/null -w '%{http_code}' "$sg/app/$static_id/jobs/")"
CPU_PIDS="$sg_pid" run_wrk auth-none "$sg/app/$static_id/jobs/" "$code"
note "no-session answer" "HTTP $code"
CPU_PIDS="$sg_pid" run_wrk healthz "$sg/_/healthz" 200
# e. memory under load
rss "$sg_pid" VmHWM rss.sparkgate.end.vmhwm
rss "$sg_pid" VmRSS rss.sparkgate.end.vmrss
stop_pid "$sg_pid"

# --- d. side by side: the same upstream directly, through nginx, a bare Go
# reverse proxy, oauth2-proxy and sparkgate (both signed in through the same
# real OpenID provider), on three payloads, in interleaved rounds ------------
start_bg bareproxy "$B/bareproxy" -upstream "$static_url"
bare_pid="$last_pid"
wait_log "$out/logs/bareproxy.log" 'url=' 10 "$bare_pid"
bare_url="$(sed -n 's/.*url=//p' "$out/logs/bareproxy.log")"

nginx_url="" nginx_pids=""
ngx="$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)"
if [ -n "$ngx" ]; then
  mkdir -p "$out/nginx"
  cat >"$out/conf/nginx.conf" <<EOF
daemon off;
worker_processes auto;
pid $root/$out/nginx/nginx.pid;
error_log $root/$out/logs/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $root/$out/nginx/body;
  proxy_temp_path $root/$out/nginx/proxy;
  fastcgi_temp_path $root/$out/nginx/fastcgi;
  uwsgi_temp_path $root/$out/nginx/uwsgi;
  scgi_temp_path $root/$out/nginx/scgi;
  upstream spark { server ${static_url#http://}; keepalive 64; }
  server {
    listen 127.0.0.1:$ngx_port;
    location / {
      proxy_pass http://spark;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
EOF
  start_bg nginx "$ngx" -p "$root/$out/nginx" -c "$root/$out/conf/nginx.conf"
  nginx_url="http://127.0.0.1:$ngx_port"
  nginx_pid="$last_pid"
  wait_http "$nginx_url/jobs/" 10 || nginx_url=""
  # Its CPU time is the master's and its workers'.
  nginx_pids="$nginx_pid $(cat /proc/"$nginx_pid"/task/*/children 2>/dev/null || true)"
else
  log "no nginx: its rows are not measured (scripts/setup.sh installs it)"
fi

o2p_url="" sgo_url="" o2p_cookie="" sgo_cookie="" o2p_pid="" sgo_pid=""
if [ "$have_oidc" = 1 ]; then
  secret="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
  cp e2e/oidc/server.mjs .cache/oidc/bench-server.mjs
  # ID tokens outlive the whole run: a session renewed midway (30 s before
  # its ID token expires) would answer every later request of wrk, which
  # keeps sending the cookie it started with, with a Set-Cookie of the
  # renewed one (about 2 KB), which a browser takes once.
  start_bg oidc env OIDC_CLIENT_SECRET="$secret" OIDC_ID_TOKEN_TTL=7200 \
    OIDC_REDIRECT_URIS="http://127.0.0.1:$o2p_port/oauth2/callback,http://127.0.0.1:$sgo_port/oauth2/callback" \
    node .cache/oidc/bench-server.mjs "$oidc_port"
  issuer="http://127.0.0.1:$oidc_port"
  wait_http "$issuer/.well-known/openid-configuration" 30

  start_bg oauth2-proxy "$o2p_bin" \
    --http-address="127.0.0.1:$o2p_port" \
    --provider=oidc --oidc-issuer-url="$issuer" \
    --client-id=sparkgate --client-secret="$secret" --code-challenge-method=S256 \
    --redirect-url="http://127.0.0.1:$o2p_port/oauth2/callback" \
    --cookie-secret="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" --cookie-secure=false \
    --email-domain='*' --skip-provider-button=true \
    --upstream="$static_url/"
  o2p_pid="$last_pid"
  wait_http "http://127.0.0.1:$o2p_port/ping" 30

  # As deploy/ runs it: JSON logs (the console format, for people at a
  # terminal, costs some more CPU per request).
  cat >"$out/conf/sparkgate-oidc.yaml" <<EOF
listen: 127.0.0.1:$sgo_port
metrics_listen: 127.0.0.1:$sgo_metrics_port
debug_pprof: true
log: {format: json}
auth:
  mode: oidc
  oidc: {issuer: "$issuer", client_id: sparkgate}
discovery:
  interval: 2s
  static: ["$static_url"]
EOF
  in_cgroup=()
  if [ -n "$sg_cgroup" ]; then
    # The process joins the group before sparkgate starts, which reads
    # the group's memory limit once (GOMEMLIMIT).
    in_cgroup=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$sg_cgroup")
    note "sparkgate (OIDC) cgroup memory limit" "$(cat "$sg_cgroup/memory.max" 2>/dev/null || cat "$sg_cgroup/memory.limit_in_bytes") bytes"
  fi
  start_bg sparkgate-oidc "${in_cgroup[@]}" env SPARKGATE_OIDC_CLIENT_SECRET="$secret" \
    SPARKGATE_SESSION_KEYS="$(head -c 32 /dev/urandom | base64)" \
    bin/sparkgate -config "$out/conf/sparkgate-oidc.yaml"
  sgo_pid="$last_pid"
  wait_http "http://127.0.0.1:$sgo_port/_/healthz" 30

  o2p_cookie="$("$B/login" -start "http://127.0.0.1:$o2p_port/oauth2/start?rd=%2F" -cookie _oauth2_proxy)" || o2p_cookie=""
  sgo_cookie="$("$B/login" -start "http://127.0.0.1:$sgo_port/oauth2/login" -cookie _sparkgate)" || sgo_cookie=""
  [ -n "$o2p_cookie" ] && o2p_url="http://127.0.0.1:$o2p_port"
  if [ -n "$sgo_cookie" ]; then
    sgo_url="http://127.0.0.1:$sgo_port"
    wait_http "$sgo_url/app/$static_id/jobs/" 30 -H "Cookie: $sgo_cookie" || true
  fi
  note "OIDC cookies" "oauth2-proxy ${#o2p_cookie} bytes, sparkgate ${#sgo_cookie} bytes (Cookie header)"
fi
note "side by side" "wrk -t$threads -c$conns, $rounds rounds of $duration, the five ways interleaved within each round; each row is the round with the median req/s"

# sbs_url THROUGH PAYLOAD : the URL of PAYLOAD through THROUGH (empty: not available)
sbs_url() {
  local base="" path=""
  case "$1" in
  direct) base="$static_url" ;;
  nginx) base="$nginx_url" ;;
  bare) base="$bare_url" ;;
  o2p) base="$o2p_url" ;;
  sg) base="$sgo_url" ;;
  esac
  [ -n "$base" ] || return 0
  case "$2" in
  html) path="/jobs/" ;;
  kill) path="/running/jobs/" ;;
  killlen) path="/running/jobs/length/" ;;
  killfit) path="/running/fit/jobs/" ;;
  json) path="/api/v1/applications/$static_id/jobs/0" ;;
  esac
  if [ "$1" = sg ] && [ "$2" != json ]; then path="/app/$static_id$path"; fi
  printf '%s%s' "$base" "$path"
}
sbs_pids() { # sbs_pids THROUGH : the processes of the proxy (none directly)
  case "$1" in
  nginx) printf '%s' "$nginx_pids" ;;
  bare) printf '%s' "$bare_pid" ;;
  o2p) printf '%s' "$o2p_pid" ;;
  sg) printf '%s' "$sgo_pid" ;;
  esac
}
sbs_hdr() { # sbs_hdr THROUGH : the Cookie header its session needs, one word per line
  case "$1" in
  o2p) printf '%s\n%s\n' -H "Cookie: $o2p_cookie" ;;
  sg) printf '%s\n%s\n' -H "Cookie: $sgo_cookie" ;;
  esac
}
for round in $(seq "$rounds"); do
  for payload in html kill killfit killlen json; do
    for through in direct nginx bare o2p sg; do
      u="$(sbs_url "$through" "$payload")"
      [ -n "$u" ] || continue
      mapfile -t hh < <(sbs_hdr "$through")
      CPU_PIDS="$(sbs_pids "$through")" run_wrk "sbs-$through-$payload.r$round" "$u" 200 ${hh[@]+"${hh[@]}"}
    done
  done
done
# The round with the median req/s stands for each row.
for f in "$out"/wrk/sbs-*.r1.txt; do
  [ -e "$f" ] || continue
  name="$(basename "$f" .r1.txt)"
  median="$(for r in "$out/wrk/$name".r*.txt; do
    printf '%s %s\n' "$(awk '/Requests\/sec/ {print $2}' "$r")" "$r"
  done | sort -n | awk '{a[NR]=$2} END {print a[int((NR+1)/2)]}')"
  [ -n "$median" ] && cp "$median" "$out/wrk/$name.txt"
done
if [ -n "$sgo_url" ]; then rss "$sgo_pid" VmHWM rss.sparkgate-oidc.end.vmhwm; fi
if [ -n "$o2p_url" ]; then rss "$o2p_pid" VmHWM rss.oauth2-proxy.end.vmhwm; fi
rss "$bare_pid" VmHWM rss.bareproxy.end.vmhwm

# --- e. many users at once: distinct OIDC sessions, one keep-alive client
# each, over the HTML page, the REST answer and the index -------------------
if [ -n "$sgo_url" ] && [ "$users" -gt 0 ]; then
  log "signing in $users users through the OpenID provider"
  if "$B/login" -start "$sgo_url/oauth2/login" -cookie _sparkgate -user user -n "$users" >"$out/conf/users.cookies" 2>"$out/logs/login-users.log"; then
    log "users: $users clients for $users_duration"
    "$B/users" -base "$sgo_url" -cookies "$out/conf/users.cookies" -pid "$sgo_pid" -duration "$users_duration" \
      -metrics "http://127.0.0.1:$sgo_metrics_port/metrics" -settle 10s \
      -heap "http://127.0.0.1:$sgo_metrics_port/debug/pprof/heap" -heap-out "$out/users-heap.pb.gz" \
      -paths "/app/$static_id/jobs/,/api/v1/applications/$static_id/jobs/0,/" >"$out/users.md" || log "users failed"
    # What holds the heap under that load (live at the last collection
    # before the profile; the runtime may hold up to twice that).
    if [ -s "$out/users-heap.pb.gz" ]; then
      { printf '\nHeap in use three quarters into the load, by allocating function (`go tool pprof -top -sample_index=inuse_space`, profile in `users-heap.pb.gz`):\n\n```\n'
        go tool pprof -top -nodecount=15 -sample_index=inuse_space "$out/users-heap.pb.gz" 2>/dev/null | sed -n '/^Showing nodes/,$p'
        printf '```\n'; } >>"$out/users.md"
    fi
  else
    log "signing in $users users failed (see $out/logs/login-users.log)"
  fi
fi
stop_all

# --- f. scale of one gateway: many apps and drivers (its own servers) -------
if [ "$run_scale" = 1 ]; then
  log "scale: no apps, a tenth, then 10,000 finished apps and 500 live drivers"
  "$B/scale" -sparkgate bin/sparkgate -dir "$out/scale" >"$out/scale.md" || log "scale failed (see $out/scale)"
fi

# --- Go benchmarks and the stripper's memory (no servers running) ------------
if [ "$run_go" = 1 ]; then
  log "go test -bench over ./proxy/... ./auth/... ./policy/..."
  go test -run '^$' -bench . -skip '^BenchmarkStripper$' -benchmem -count 1 -timeout 10m ./proxy/... ./auth/... ./policy/... >"$out/gobench.txt" 2>&1 ||
    log "go test -bench failed (see $out/gobench.txt); the report shows what ran"
  # The stripper's own figure (issue: at least 1 GB/s) swings by a third
  # from one run to the next on a shared machine: the report gives the
  # median of five, and pairs each run with io.Copy's of the same turn.
  log "go test -bench BenchmarkStripper, five times"
  go test -run '^$' -bench '^BenchmarkStripper$' -benchmem -count 5 -timeout 10m ./proxy >>"$out/gobench.txt" 2>&1 ||
    log "BenchmarkStripper failed (see $out/gobench.txt)"
fi
log "stripmem: 50 MiB page through the stripper and io.Copy"
"$B/stripmem" -size $((50 << 20)) >>"$figures"

note "wall time" "$(($(date +%s) - started)) s"
"$B/report" -dir "$out" >"$out/report.md"
cat "$out/report.md"
