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
# Usage: scripts/tls-calibrate.sh [KEY...]   (default: ec rsa)
# Prints one TSV line per key type, after a header:
#   key handshakes seconds handshakes_per_s server_cpu_ms server_cpu_ms_per_handshake
# and writes the same to RESULTS/tls-calibration-<time>/calibration.tsv.
# It takes the run lock (one measurement at a time on this host).
set -euo pipefail

LT_PROG=tls-calibrate
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
for lib in envfile matrix netns target; do
  # shellcheck source=/dev/null
  source "$LT_ROOT/scripts/lib/$lib.sh"
done

CALIBRATE_S="${CALIBRATE_S:-10}"
WARM_S="${WARM_S:-5}"
LT_LOCK_FILE="${LT_LOCK_FILE:-/run/lock/ltsuite/run-matrix.lock}"
CAL_PID=""

# cal_cpu_ticks PID: the process's user + system CPU time, in clock ticks.
cal_cpu_ticks() {
  local stat
  stat="$(<"/proc/$1/stat")"
  read -r -a fields <<<"${stat##*) }"
  # After "comm)": state is field 3, utime 14 and stime 15 (proc(5)).
  printf '%s\n' $((fields[11] + fields[12]))
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

# cal_key KEY DIR: one key type's line.
# shellcheck disable=SC2034 # SC2034: cell is read through a nameref (tls.sh)
cal_key() {
  local key="$1" port mgmt deadline before after count seconds tick
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
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
  cal_s_time "$port" "$WARM_S" "$TLS_CERT_FILE" >/dev/null
  before="$(cal_cpu_ticks "$CAL_PID")"
  read -r count seconds < <(cal_s_time "$port" "$CALIBRATE_S" "$TLS_CERT_FILE")
  after="$(cal_cpu_ticks "$CAL_PID")"
  end_child "$CAL_PID" TERM 10 || true
  CAL_PID=""
  tick="$(getconf CLK_TCK)"
  python3 -c 'import sys
key, count, seconds, ticks, tick = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
cpu_ms = ticks * 1000 / tick
print(f"{key}\t{count}\t{seconds}\t{count / seconds:.1f}\t{cpu_ms:.0f}\t{cpu_ms / count:.3f}")' \
    "$key" "$count" "$seconds" "$((after - before))" "$tick"
}

main() {
  local -a keys=("$@")
  [[ ${#keys[@]} -gt 0 ]] || keys=(ec rsa)
  local key
  for key in "${keys[@]}"; do
    [[ -n "${TLS_KEYTOOL_ARGS[$key]:-}" ]] || usage_error "'$key' is not a key type the suite makes (ec or rsa)"
  done
  LT_RUN_DIR="${LT_RESULTS_DIR:-$LT_ROOT/results}/tls-calibration-$(date -u +%Y%m%d-%H%M%S)"
  mkdir -p "$LT_RUN_DIR"
  exec 9>>"$LT_LOCK_FILE"
  flock -w "${LT_LOCK_WAIT:-1800}" 9 || abort "the run lock $LT_LOCK_FILE stayed taken"
  trap '[[ -z "$CAL_PID" ]] || end_child "$CAL_PID" TERM 10 || true' EXIT
  {
    printf 'key\thandshakes\tseconds\thandshakes_per_s\tserver_cpu_ms\tserver_cpu_ms_per_handshake\n'
    for key in "${keys[@]}"; do
      cal_key "$key"
    done
  } | tee "$LT_RUN_DIR/calibration.tsv"
  say "written to ${LT_RUN_DIR#"$LT_ROOT"/}/calibration.tsv"
}

main "$@"
