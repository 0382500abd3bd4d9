# shellcheck shell=bash
# Shared set-up for every .bats file: assertions, the repo root, a sandbox.

LT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LT_ROOT
load "$LT_ROOT/.tools/bats/node_modules/bats-support/load.bash"
load "$LT_ROOT/.tools/bats/node_modules/bats-assert/load.bash"

# Runs started by tests queue behind any other run on this host instead of
# failing on the host-wide lock.
export LT_LOCK_WAIT="${LT_LOCK_WAIT:-900}"

# lt_source_libs NAME...: source scripts/lib/NAME.sh into the test's shell.
lt_source_libs() {
  local lib
  # shellcheck source=scripts/lib/common.sh
  source "$LT_ROOT/scripts/lib/common.sh"
  for lib in "$@"; do
    # shellcheck source=/dev/null
    source "$LT_ROOT/scripts/lib/$lib.sh"
  done
}

# lt_write FILE: stdin into FILE (under the test's temporary directory).
lt_write() {
  mkdir -p "$(dirname "$1")"
  cat >"$1"
}

# lt_require_root: integration tests create network namespaces.
lt_require_root() {
  if [[ $EUID -ne 0 ]]; then
    skip "needs root (network namespaces); run make test as root"
  fi
}

# lt_run_matrix_once MATRIX: in setup_file, one run of MATRIX into the test
# file's own results directory (LT_RESULTS_DIR, exported for the tests); its
# output goes to run.log and its exit status to run.status there.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run
lt_run_matrix_once() {
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  run "$LT_ROOT/scripts/run-matrix.sh" "$1"
  printf '%s\n' "$output" >"$BATS_FILE_TMPDIR/run.log"
  printf '%s\n' "$status" >"$BATS_FILE_TMPDIR/run.status"
}

# lt_run_settings_once NAME KEY=VALUE...: in setup_file, as root, one run of
# a matrix of these lines (BATS_FILE_TMPDIR/NAME.matrix; lt_run_matrix_once).
lt_run_settings_once() {
  lt_require_root
  local matrix="$BATS_FILE_TMPDIR/$1.matrix"
  shift
  printf '%s\n' "$@" >"$matrix"
  lt_run_matrix_once "$matrix"
}

# lt_csv_column CSV NAME: the values of column NAME, one per line (no header).
# The suite's CSV quotes only text with commas or quotes; numbers are bare.
lt_csv_column() {
  local csv="$1" name="$2"
  python3 - "$csv" "$name" <<'PY'
import csv, sys
with open(sys.argv[1], newline="") as f:
    for row in csv.DictReader(f):
        print(row[sys.argv[2]])
PY
}

# The readers below look at the run in $RUN_DIR (set by the test's setup).

# lt_cell_value CELL KEY: a knob of a cell, as the runner resolved it.
lt_cell_value() {
  sed -n "s/^$2=//p" "$RUN_DIR/cells/$1/cell.env"
}

# lt_effective_sysctl CELL SIDE NAME: what the kernel reported in that namespace.
lt_effective_sysctl() {
  awk -F'\t' -v side="$2" -v name="$3" '$1 == side && $2 == name { print $3 }' \
    "$RUN_DIR/cells/$1/sysctls.tsv"
}

# lt_row_value CELL COLUMN: one value of the results row of CELL.
lt_row_value() {
  jq -r --arg c "$2" '.[$c] // empty' "$RUN_DIR/cells/$1/row.json"
}

# lt_assert_saturated_capacity CELL: at saturation the listener's backlog is
# min(accept-count, somaxconn), Tomcat holds max-connections and the accept
# queue backlog + 1, so the server max-connections + backlog + 1. The kernel
# checks "queue full" before it adds a connection, without a lock, so
# handshakes that complete at the same moment on several CPUs can each pass
# the check: the queue may hold up to (CPUs - 1) more. Fails with the cell's
# sampled series.
lt_assert_saturated_capacity() {
  local cell="$1" mc ac somaxconn backlog expected peak queue cpus
  mc="$(lt_cell_value "$cell" TOMCAT_MAX_CONNECTIONS)"
  ac="$(lt_cell_value "$cell" TOMCAT_ACCEPT_COUNT)"
  somaxconn="$(lt_effective_sysctl "$cell" server net.core.somaxconn)"
  backlog=$((ac < somaxconn ? ac : somaxconn))
  expected=$((mc + backlog + 1))
  cpus="$(nproc)"
  peak="$(lt_row_value "$cell" server_conns_peak)"
  queue="$(lt_row_value "$cell" accept_queue_peak)"
  # Saturated: more users than the server can hold.
  [ "$(lt_cell_value "$cell" VUS)" -gt "$expected" ] || fail "$cell: not saturated"
  [ "$(lt_row_value "$cell" listen_backlog)" -eq "$backlog" ] || fail "$cell: listen_backlog $(lt_row_value "$cell" listen_backlog), expected $backlog"
  [ "$(lt_row_value "$cell" queue_capacity)" -eq "$expected" ] || fail "$cell: queue_capacity $(lt_row_value "$cell" queue_capacity), expected $expected"
  if [ "$queue" -lt $((backlog + 1)) ] || [ "$queue" -gt $((backlog + cpus)) ] \
    || [ "$peak" -ne $((mc + queue)) ]; then
    fail "$cell: server_conns_peak $peak, accept_queue_peak $queue; expected $expected and $((backlog + 1)) (at most $((cpus - 1)) more on $cpus CPUs); samples:
$(cat "$RUN_DIR/cells/$cell/samples.tsv")"
  fi
}

# lt_assert_prediction_kept CELL: the row's prediction check matched, or its
# notes name the counters that explain the difference.
lt_assert_prediction_kept() {
  local cell="$1"
  case "$(lt_row_value "$cell" prediction_check)" in
    match) ;;
    mismatch)
      run lt_row_value "$cell" prediction_notes
      refute_output --partial "nothing in the cell's counters explains"
      ;;
    *) fail "$cell: no prediction_check" ;;
  esac
}

# lt_assert_raw_percentiles ROW_JSON SAMPLES...: the row's med, p90, p95 and
# p99 (from merged histograms) are those of every raw sample in the k6 JSON
# outputs SAMPLES (ltsuite.latency, as k6 computes them) within the
# histogram's 0.5 % (and the row's 0.001 ms). Prints the samples' count.
lt_assert_raw_percentiles() {
  local row="$1" exact column name
  shift
  exact="$(PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.latency "$@")"
  for column in med:lat_med_ms 'p(90):lat_p90_ms' 'p(95):lat_p95_ms' 'p(99):lat_p99_ms'; do
    name="${column%%:*}"
    jq -e --arg name "$name" --arg column "${column#*:}" --argjson exact "$exact" \
      '.[$column] != null and ((.[$column] - $exact[$name]) | fabs <= 0.005 * $exact[$name] + 0.0005)' "$row" >/dev/null \
      || { fail "${column#*:} $(jq --arg c "${column#*:}" '.[$c]' "$row") against $(jq --arg n "$name" '.[$n]' <<<"$exact") of the raw samples"; return 1; }
  done
  jq .count <<<"$exact"
}

# lt_cells: the run's cell ids, in order.
lt_cells() {
  lt_csv_column "$RUN_DIR/results.csv" cell
}

# lt_free_port: a TCP port nothing listens on at 127.0.0.1 now.
lt_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
