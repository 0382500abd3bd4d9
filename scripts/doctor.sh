#!/usr/bin/env bash
# Summary: check a live host for the listen-queue failures the suite reproduces, read-only.
# Usage: scripts/doctor.sh [--port 8080] [--actuator URL] [--window 10s] [--out DIR] [--before DIR]
#
# Reads, over the window: the port's listeners (ss -ltn: backlog as Send-Q, accept queue as
# Recv-Q, every second), the sysctls that matter (/proc/sys), nstat's counters (before and
# after; -s leaves nstat's history file alone; ListenOverflows every 100 ms), TIME-WAIT and
# SYN-RECV sockets, the listening process's open files against its limit, and, when ACTUATOR
# answers, Tomcat's settings (of /configprops/server, else /configprops, only the three it
# reads are written) and metrics.
# It writes nothing but its own directory: no sysctl, no listener, no load (the
# actuator GETs aside). Findings, doctor.json, doctor.md and reproduce.matrix come from
# ltsuite/doctor.py beside this script (Python's standard library only). With --before, a
# reading of the same host and port the doctor wrote earlier, what changed since (settings,
# listeners, rates, findings) from ltsuite/doctorcompare.py, in compare.md and compare.json.
#
# Needs bash, iproute2 (ss, nstat) and python3. To run it on another host, copy this script
# and the ltsuite/ directory beside it (docs/doctor.md).
set -euo pipefail

DOCTOR_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# die MESSAGE: the reason on stderr, exit 2 (bad input).
die() {
  printf 'doctor: %s\n' "$*" >&2
  exit 2
}

# window_seconds TEXT: "10s" or "10" as whole seconds, 1 to 3600; fails otherwise.
window_seconds() {
  [[ "$1" =~ ^([0-9]+)s?$ ]] || return 1
  local s=$((10#${BASH_REMATCH[1]}))
  ((s >= 1 && s <= 3600)) || return 1
  printf '%s\n' "$s"
}

# listeners PORT: `ss -ltnH` lines of the sockets listening on PORT.
listeners() {
  ss -ltnH "sport = :$1"
}

# read_process PORT: "key<TAB>value" of the process listening on PORT (pid, comm,
# its soft open-file limit, its open files); nothing when ss shows no process.
# Open files are empty (unmeasured, not 0) when /proc/PID/fd cannot be listed:
# another user's process without root, or a process that has just ended.
read_process() {
  local pid nofile files
  pid="$(ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)" || true
  [[ -n "$pid" && -r "/proc/$pid/limits" ]] || return 0
  nofile="$(awk '/^Max open files/ { print $4 }' "/proc/$pid/limits")"
  files="$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" || files=""
  printf 'pid\t%s\ncomm\t%s\nnofile\t%s\nopen_files\t%s\n' "$pid" "$(cat "/proc/$pid/comm")" "$nofile" "$files"
}

# py ARGS...: the findings module beside this script, without writing its
# bytecode there (-B: no __pycache__ beside the copied scripts).
py() {
  PYTHONPATH="$DOCTOR_DIR" python3 -B -S -m ltsuite.doctor "$@"
}

# now_ms: the clock in milliseconds.
now_ms() {
  local ns
  ns="$(date +%s%N)"
  printf '%s\n' $((ns / 1000000))
}

# sleep_until_ms T: sleep until now_ms reaches T (at once if it has).
sleep_until_ms() {
  local left=$(($1 - $(now_ms)))
  ((left <= 0)) || sleep "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
}

# default_out ID: results/doctor-ID in the suite's checkout, ./doctor-ID elsewhere.
default_out() {
  if [[ -n "${LT_RESULTS_DIR:-}" ]]; then
    printf '%s/doctor-%s\n' "$LT_RESULTS_DIR" "$1"
  elif [[ -f "$DOCTOR_DIR/../env/defaults.env" ]]; then
    printf '%s/doctor-%s\n' "$(cd "$DOCTOR_DIR/.." && pwd)/results" "$1"
  else
    printf '%s/doctor-%s\n' "$PWD" "$1"
  fi
}

main() {
  local port=8080 actuator="" window=10s out="" before="" window_s i readings start_ms
  while (($#)); do
    case "$1" in
      --port) port="${2:-}"; shift 2 || die "--port needs a value" ;;
      --actuator) actuator="${2:-}"; shift 2 || die "--actuator needs a value" ;;
      --window) window="${2:-}"; shift 2 || die "--window needs a value" ;;
      --out) out="${2:-}"; shift 2 || die "--out needs a value" ;;
      --before) before="${2:-}"; shift 2 || die "--before needs a value" ;;
      -h | --help) sed -n 's/^# \(Summary\|Usage\):/\1:/p' "${BASH_SOURCE[0]}"; return 0 ;;
      *) die "unknown argument '$1' (--port, --actuator, --window, --out, --before)" ;;
    esac
  done
  if [[ ! "$port" =~ ^[0-9]{1,5}$ ]] || ((10#$port < 1 || 10#$port > 65535)); then
    die "PORT '$port' is not a TCP port (1-65535)"
  fi
  port=$((10#$port))
  window_s="$(window_seconds "$window")" || die "WINDOW '$window' is not a whole number of seconds from 1s to 3600s"
  [[ -z "$actuator" || "$actuator" =~ ^https?://[^[:space:]]+$ ]] || die "ACTUATOR '$actuator' is not an http(s) URL"
  command -v ss >/dev/null || die "needs iproute2's ss"
  command -v nstat >/dev/null || die "needs iproute2's nstat"
  command -v python3 >/dev/null || die "needs python3"
  [[ -n "$(listeners "$port")" ]] || die "nothing listens on TCP port $port here (ss -ltn)"
  if [[ -n "$before" ]]; then
    PYTHONPATH="$DOCTOR_DIR" python3 -B -S -m ltsuite.doctorcompare check "$before" "$port" "$(uname -n)" || exit 2
  fi

  [[ -n "$out" ]] || out="$(default_out "$(date -u +%Y%m%d-%H%M%S)")"
  [[ ! -e "$out" ]] || die "$out exists already"
  readings="$out/readings"
  mkdir -p "$readings"
  printf 'doctor: reading port %s for %s s (read-only) -> %s\n' "$port" "$window_s" "$out" >&2
  {
    printf 'port\t%s\nwindow_s\t%s\nkernel\t%s\nhost\t%s\nstarted\t%s\nactuator\t%s\n' "$port" "$window_s" \
      "$(uname -r)" "$(uname -n)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$actuator"
  } >"$readings/meta.tsv"
  # Every sysctl a matrix may set (env/sysctls.tsv, as ltsuite/sysctl_names.py has it).
  py sysctls >"$readings/sysctls.tsv"
  read_process "$port" >"$readings/process.tsv"
  # Only the server properties the findings read reach the disk: the actuator's answer, with
  # whatever else show-values=always shows (passwords, keys), stays in Python's memory.
  if [[ -n "$actuator" ]] && ! py configprops "${actuator%/}" >"$readings/configprops.json" 2>/dev/null; then
    rm -f "$readings/configprops.json"
    printf 'doctor: no server properties at %s/configprops\n' "${actuator%/}" >&2
  fi
  start_ms="$(now_ms)"
  nstat -asz >"$readings/nstat-before.txt"
  # ListenOverflows every 100 ms: its waves of retransmissions count the users left waiting
  # (docs/doctor.md, "The load"); window_s * 10 + 1 samples, then it ends.
  local overflows_pid
  py overflows "$window_s" >"$readings/overflows.tsv" &
  overflows_pid=$!
  # Tomcat's threads and connections every second, in one Python process beside the loop.
  local metrics_pid=""
  if [[ -n "$actuator" ]]; then
    py metrics "${actuator%/}" "$window_s" >"$readings/metrics.tsv" &
    metrics_pid=$!
  fi
  # One sample a second, on the second from the start, however long a sample takes.
  for ((i = 0; i <= window_s; i++)); do
    printf '# sample %s\n' "$i" >>"$readings/ss-listen.txt"
    listeners "$port" >>"$readings/ss-listen.txt"
    # The counters the load's estimate reads, a second apart (docs/doctor.md, "The load").
    printf '# sample %s\n' "$i" >>"$readings/nstat-samples.txt"
    nstat -asz TcpPassiveOpens TcpExtListenOverflows TcpExtListenDrops >>"$readings/nstat-samples.txt"
    ((i == window_s)) || sleep_until_ms $((start_ms + (i + 1) * 1000))
  done
  nstat -asz >"$readings/nstat-after.txt"
  # The window is the time between the two snapshots, not what the actuator's reads took after it.
  printf 'elapsed_ms\t%s\n' $(($(now_ms) - start_ms)) >>"$readings/meta.tsv"
  [[ -z "$metrics_pid" ]] || wait "$metrics_pid" || printf 'doctor: the actuator metrics were not read\n' >&2
  wait "$overflows_pid" || printf 'doctor: ListenOverflows was not read every 100 ms\n' >&2
  ss -tanH state time-wait state syn-recv >"$readings/sockets.txt"
  py report "$readings" "$out"
  [[ -z "$before" ]] || PYTHONPATH="$DOCTOR_DIR" python3 -B -S -m ltsuite.doctorcompare "$before" "$out"
  printf 'doctor: wrote %s/doctor.md, doctor.json and reproduce.matrix (make run-matrix MATRIX=%s/reproduce.matrix runs it in the lab)\n' "$out" "$out" >&2
}

main "$@"
