#!/usr/bin/env bash
# What a new TLS connection costs the server on this machine, per key type
# (TLS_KEY): the suite's own target started on 127.0.0.1 with HTTPS
# (scripts/lib/tls.sh, a key made for this calibration in its own results
# directory), `openssl s_time -new` making full handshakes against it for
# CALIBRATE_S seconds after a warm-up of WARM_S seconds (the JIT compiles
# the handshake's code first), and the JVM's CPU time (utime + stime,
# /proc/PID/stat) read before and after. Each handshake's server cost is
# that CPU over the handshakes made: it holds Tomcat's accept, the
# handshake and the close (openssl sends no request).
#
# The users' half: k6 (the suite's users, scenarios/keepalive.js with
# CONNECTION_REUSE=0, so each request is a new connection with a full
# handshake, verified against the key's certificate) run twice against the
# same warm target, CLIENT_FEW and CLIENT_MANY requests over CLIENT_VUS
# users, and k6's CPU time (utime + stime, bash's `times` for the child)
# each time: k6's CPU per new TLS connection is the difference of the two
# CPU times over the difference of the requests, so k6's start (its JS
# runtime, its VUs, its summary) cancels out and what is left is a new
# connection's dial, handshake, request and answer in k6.
#
# nginx's side (PROXY_TLS=1): nginx started on 127.0.0.1 with the same key,
# one worker process as the suite's (scripts/ltsuite/proxy.py), answering
# every request itself (return 200), no session cache or tickets, and
# `openssl s_time -new` against it as against the target: the worker's CPU
# (utime + stime) over the handshakes.
#
# Usage: scripts/tls-calibrate.sh [KEY...]   (default: ec rsa)
# Prints one TSV line per key type, after a header:
#   key handshakes seconds handshakes_per_s server_cpu_ms server_cpu_ms_per_handshake
#   client_handshakes client_cpu_ms client_cpu_ms_per_handshake
#   nginx_handshakes nginx_cpu_ms nginx_cpu_ms_per_handshake
# and writes the same to RESULTS/tls-calibration-<time>/calibration.tsv.
# It takes the run lock (one measurement at a time on this host).
set -euo pipefail

LT_PROG=tls-calibrate
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix netns target k6; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

CALIBRATE_S="${CALIBRATE_S:-10}"
WARM_S="${WARM_S:-5}"
LT_LOCK_FILE="${LT_LOCK_FILE:-/run/lock/ltsuite/run-matrix.lock}"
CLIENT_VUS="${CLIENT_VUS:-2}"
CLIENT_FEW="${CLIENT_FEW:-200}"
CLIENT_MANY="${CLIENT_MANY:-1200}"
CAL_PID=""
NGINX_PID=""

# cal_cpu_ticks PID: the process's user + system CPU time, in clock ticks.
cal_cpu_ticks() {
  local stat
  stat="$(<"/proc/$1/stat")"
  read -r -a fields <<<"${stat##*) }"
  # After "comm)": state is field 3, utime 14 and stime 15 (proc(5)).
  printf '%s\n' $((fields[11] + fields[12]))
}

# cal_handshakes PORT PID CAFILE: after WARM_S of handshakes, full handshakes
# with the server at PORT for CALIBRATE_S; prints how many, the seconds they
# took and the CPU ticks the server process PID spent on them.
cal_handshakes() {
  local port="$1" pid="$2" cafile="$3" before after count seconds
  cal_s_time "$port" "$WARM_S" "$cafile" >/dev/null
  before="$(cal_cpu_ticks "$pid")"
  read -r count seconds < <(cal_s_time "$port" "$CALIBRATE_S" "$cafile")
  after="$(cal_cpu_ticks "$pid")"
  printf '%s %s %s\n' "$count" "$seconds" "$((after - before))"
}

# cal_s_time PORT SECONDS CAFILE: full handshakes for SECONDS; prints how
# many were made ("N connections in T real seconds").
cal_s_time() {
  local out
  out="$(openssl s_time -connect "127.0.0.1:$1" -new -time "$2" -verify 1 -CAfile "$3" 2>&1 </dev/null)"
  [[ "$out" =~ ([0-9]+)\ connections\ in\ ([0-9]+)\ real\ seconds ]] \
    || abort "openssl s_time gave no count: ${out##*$'\n'}"
  printf '%s %s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
}

# cal_k6 PORT REQUESTS CAFILE: k6 makes REQUESTS new TLS connections (one
# request each, over CLIENT_VUS users); prints "REQUESTS CPU_MS", k6's CPU
# time (user + system) in ms. Any failed request aborts: the difference
# would then not be full handshakes.
cal_k6() {
  local port="$1" requests="$2" cafile="$3" out
  out="$( (env -i PATH="$PATH" HOME="${HOME:-/root}" SSL_CERT_FILE="$cafile" K6_NO_USAGE_REPORT=true \
    TARGET_URL="https://127.0.0.1:$port" VUS="$CLIENT_VUS" REQUESTS_PER_VU=$((requests / CLIENT_VUS)) \
    CONNECTION_REUSE=0 CLIENT_CLOSES=0 DURATION=120s REQUEST_TIMEOUT=10s GRACEFUL_STOP=1s \
    SUMMARY_FILE=/dev/null "$LT_K6" run --quiet "$LT_ROOT/scenarios/keepalive.js" >"$LT_RUN_DIR/k6-$requests.log" 2>&1 </dev/null
    times) )"
  [[ "$(<"$LT_RUN_DIR/k6-$requests.log")" =~ http_reqs=([0-9]+)\ failed=([0-9]+) ]] \
    || abort "k6 gave no count: $(tail -n 3 "$LT_RUN_DIR/k6-$requests.log")"
  [[ "${BASH_REMATCH[1]}" == $((requests / CLIENT_VUS * CLIENT_VUS)) && "${BASH_REMATCH[2]}" == 0 ]] \
    || abort "k6 made ${BASH_REMATCH[1]} requests, ${BASH_REMATCH[2]} failed, where $requests were to succeed"
  local count="${BASH_REMATCH[1]}"
  # times: the shell's own line, then its children's (k6): "XmY.YYYs XmY.YYYs".
  [[ "${out##*$'\n'}" =~ ^([0-9]+)m([0-9.]+)s\ ([0-9]+)m([0-9.]+)s$ ]] || abort "no CPU time for k6: ${out##*$'\n'}"
  python3 -c 'import sys; u_m, u_s, s_m, s_s = sys.argv[2:]
print(sys.argv[1], round((int(u_m) * 60 + float(u_s) + int(s_m) * 60 + float(s_s)) * 1000))' \
    "$count" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}"
}

# cal_free_port: a free TCP port on 127.0.0.1.
cal_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# cal_nginx KEY_DIR: nginx's CPU over full handshakes with the key in KEY_DIR
# (cert.pem, key.pem); prints "HANDSHAKES CPU_MS". nginx runs in the
# foreground in the background (NGINX_PID, its master), its one worker read.
cal_nginx() {
  local keys="$1" port dir worker deadline count seconds ticks tick
  port="$(cal_free_port)"
  dir="$LT_RUN_DIR/nginx-$(basename "$keys")"
  mkdir -p "$dir"
  cat >"$dir/nginx.conf" <<EOF
daemon off;
user $(id -un) $(id -gn);
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log error;
events { worker_connections 1024; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $keys/cert.pem;
    ssl_certificate_key $keys/key.pem;
    ssl_session_cache off;
    ssl_session_tickets off;
    location / { return 200 "ok\n"; }
  }
}
EOF
  nginx -e "$dir/error.log" -c "$dir/nginx.conf" -p "$dir" >"$dir/nginx.log" 2>&1 9>&- &
  NGINX_PID=$!
  deadline=$((SECONDS + 20))
  until worker="$(ps -o pid= --ppid "$NGINX_PID" 2>/dev/null | head -n 1 | tr -d ' ')" && [[ -n "$worker" ]] \
      && curl -fsS --cacert "$keys/cert.pem" -o /dev/null --max-time 1 "https://127.0.0.1:$port/" 2>/dev/null; do
    ((SECONDS < deadline)) || abort "nginx did not start: $(tail -n 2 "$dir/error.log" "$dir/nginx.log" 2>/dev/null)"
    pid_running "$NGINX_PID" || abort "nginx exited: $(tail -n 2 "$dir/error.log" "$dir/nginx.log" 2>/dev/null)"
    sleep 0.2
  done
  read -r count seconds ticks < <(cal_handshakes "$port" "$worker" "$keys/cert.pem")
  end_child "$NGINX_PID" TERM 10 || true
  NGINX_PID=""
  tick="$(getconf CLK_TCK)"
  printf '%s %s\n' "$count" $((ticks * 1000 / tick))
}

# cal_key KEY DIR: one key type's line.
# shellcheck disable=SC2034 # SC2034: cell is read through a nameref (tls.sh)
cal_key() {
  local key="$1" port mgmt deadline count seconds ticks tick few few_ms many many_ms ngx ngx_ms
  port="$(cal_free_port)"
  mgmt=$((port + 1))
  local -A cell=([TARGET_TLS]=1 [TLS_KEY]="$key" [SERVER_ADDR]=127.0.0.1 [SERVER_PORT]="$port" [MANAGEMENT_PORT]="$mgmt")
  tls_cell_prepare cell || abort "$CELL_ERROR"
  local -a tls_env
  mapfile -t tls_env < <(tls_spring_env cell)
  env -i PATH="$PATH" HOME="${HOME:-/root}" SERVER_ADDRESS=127.0.0.1 SERVER_PORT="$port" MANAGEMENT_PORT="$mgmt" \
    MANAGEMENT_ADDRESS=127.0.0.1 "${tls_env[@]}" \
    java -Xmx256m -jar "$TARGET_OWN_JAR" >"$LT_RUN_DIR/target-$key.log" 2>&1 9>&- &
  CAL_PID=$!
  deadline=$((SECONDS + 60))
  until curl -fsS --cacert "$TLS_CERT_FILE" -o /dev/null --max-time 1 "https://127.0.0.1:$port/health" 2>/dev/null; do
    ((SECONDS < deadline)) || abort "the target did not start: $(tail -n 2 "$LT_RUN_DIR/target-$key.log")"
    pid_running "$CAL_PID" || abort "the target exited: $(tail -n 2 "$LT_RUN_DIR/target-$key.log")"
    sleep 0.2
  done
  read -r count seconds ticks < <(cal_handshakes "$port" "$CAL_PID" "$TLS_CERT_FILE")
  read -r few few_ms < <(cal_k6 "$port" "$CLIENT_FEW" "$TLS_CERT_FILE")
  read -r many many_ms < <(cal_k6 "$port" "$CLIENT_MANY" "$TLS_CERT_FILE")
  [[ -n "${few_ms:-}" && -n "${many_ms:-}" ]] || abort "k6's half of the calibration failed (above)"
  end_child "$CAL_PID" TERM 10 || true
  CAL_PID=""
  read -r ngx ngx_ms < <(cal_nginx "$(dirname "$TLS_CERT_FILE")")
  [[ -n "${ngx_ms:-}" ]] || abort "nginx's calibration failed (above)"
  tick="$(getconf CLK_TCK)"
  python3 -c 'import sys
key, count, seconds, ticks, tick = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
few, few_ms, many, many_ms, ngx, ngx_ms = (int(a) for a in sys.argv[6:12])
cpu_ms = ticks * 1000 / tick
client = f"{(many_ms - few_ms) / (many - few):.3f}" if many > few and many_ms > few_ms else ""
print(f"{key}\t{count}\t{seconds}\t{count / seconds:.1f}\t{cpu_ms:.0f}\t{cpu_ms / count:.3f}"
      f"\t{many - few}\t{many_ms - few_ms}\t{client}\t{ngx}\t{ngx_ms}\t{ngx_ms / ngx:.3f}")' \
    "$key" "$count" "$seconds" "$ticks" "$tick" "$few" "$few_ms" "$many" "$many_ms" "$ngx" "$ngx_ms"
}

main() {
  local -a keys=("$@")
  [[ ${#keys[@]} -gt 0 ]] || keys=(ec rsa)
  local key knob
  for knob in CLIENT_VUS CLIENT_FEW CLIENT_MANY; do
    [[ "${!knob}" =~ ^[1-9][0-9]*$ ]] || usage_error "$knob=${!knob}: a count of 1 or more"
  done
  ((CLIENT_MANY > CLIENT_FEW && CLIENT_FEW >= CLIENT_VUS)) \
    || usage_error "CLIENT_MANY ($CLIENT_MANY) must be above CLIENT_FEW ($CLIENT_FEW), itself at least CLIENT_VUS ($CLIENT_VUS)"
  for key in "${keys[@]}"; do
    [[ -n "${TLS_KEYTOOL_ARGS[$key]:-}" ]] || usage_error "'$key' is not a key type the suite makes (ec or rsa)"
  done
  LT_RUN_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}/tls-calibration-$(date -u +%Y%m%d-%H%M%S)"
  mkdir -p "$LT_RUN_DIR"
  exec 9>>"$LT_LOCK_FILE"
  flock -w "${LT_LOCK_WAIT:-1800}" 9 || abort "the run lock $LT_LOCK_FILE stayed taken"
  trap '[[ -z "$CAL_PID" ]] || end_child "$CAL_PID" TERM 10 || true; [[ -z "$NGINX_PID" ]] || end_child "$NGINX_PID" TERM 10 || true' EXIT
  # Not a pipeline: cal_key sets CAL_PID in this shell, so the EXIT trap stops
  # the target whatever ends the calibration.
  {
    printf 'key\thandshakes\tseconds\thandshakes_per_s\tserver_cpu_ms\tserver_cpu_ms_per_handshake'
    printf '\tclient_handshakes\tclient_cpu_ms\tclient_cpu_ms_per_handshake'
    printf '\tnginx_handshakes\tnginx_cpu_ms\tnginx_cpu_ms_per_handshake\n'
  } >"$LT_RUN_DIR/calibration.tsv"
  for key in "${keys[@]}"; do
    cal_key "$key" >>"$LT_RUN_DIR/calibration.tsv"
  done
  cat "$LT_RUN_DIR/calibration.tsv"
  say "written to ${LT_RUN_DIR#"$LT_ROOT"/}/calibration.tsv"
}

main "$@"
