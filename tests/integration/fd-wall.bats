#!/usr/bin/env bats
# The file wall, met on purpose with a few hundred users: one k6 process
# whose open-file limit is lowered (K6_NOFILE=300) holds 300 less its own
# files as sockets; the others fail with "too many open files", counted as
# fail_no_fd (not as connect failures), as the prediction says and its note
# names. K6_INSTANCES=auto runs enough processes for the same users.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_LOCK_WAIT=900
  local matrix="$BATS_FILE_TMPDIR/fd-wall.matrix"
  # A burst whose 400 users hold their connections for 3 s, with room for
  # all of them on the server (threads started beforehand, a queue that
  # takes the burst); one cell with one k6 process, one with auto.
  printf '%s\n' SCENARIO=burst VUS=400 REQUESTS_PER_VU=1 DELAY_MS=3000 BURST_LEAD_MS=1500 DURATION=2s \
    GRACEFUL_STOP=6s REQUEST_TIMEOUT=10s TOMCAT_MAX_THREADS=400 TOMCAT_MIN_SPARE_THREADS=400 TOMCAT_MAX_CONNECTIONS=1000 TOMCAT_ACCEPT_COUNT=1000 K6_NOFILE=300 \
    'K6_INSTANCES=1 auto' K6_HTML_REPORT=0 MONITORING=off >"$matrix"
  lt_run_matrix_once "$matrix"
}

setup() {
  load '../test_helper'
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  ONE="$(lt_cells | head -n 1)"
  AUTO="$(lt_cells | tail -n 1)"
}

@test "the run warned of the file wall before it started, with the numbers" {
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ]
  run cat "$BATS_FILE_TMPDIR/run.log"
  assert_output --partial "400 VUs in 1 k6 process(es) need about 400 open files each, but a process may open at most 300 (K6_NOFILE=300): connects will fail with 'too many open files' (fail_no_fd); K6_INSTANCES=auto runs 2"
}

@test "one k6 process with 300 files: the users past them fail as fail_no_fd, as predicted, and the note names k6's limit" {
  [ "$(lt_cell_value "$ONE" K6_INSTANCES)" = 1 ]
  [ "$(lt_row_value "$ONE" predicted_server_conns_peak)" -eq 292 ]
  [ "$(lt_row_value "$ONE" predicted_failed_users)" -eq 108 ]
  [ "$(lt_row_value "$ONE" predicted_failed_users_from)" = fail_no_fd ]
  local no_fd peak
  no_fd="$(lt_row_value "$ONE" fail_no_fd)"
  peak="$(lt_row_value "$ONE" server_conns_peak)"
  # Within the files k6 holds besides its sockets (design.FILE_SLACK).
  ((no_fd >= 98 && no_fd <= 118)) || fail "fail_no_fd $no_fd, predicted 108"
  ((peak >= 282 && peak <= 302)) || fail "server_conns_peak $peak, predicted 292"
  # Not connect failures; every failure is counted once.
  [ "$(lt_row_value "$ONE" fail_connect)" -eq 0 ]
  jq -e '(.fail_no_fd + .fail_connect + .fail_reset + .fail_timeout + .fail_http_4xx + .fail_http_5xx + .fail_other)
         == .failed_reqs and .failed_reqs == .fail_no_fd' "$RUN_DIR/cells/$ONE/row.json"
  grep -q "socket: too many open files" "$RUN_DIR/cells/$ONE/k6.log"
  # The kernel's figures match their prediction. (The parts of each request are judged too, and
  # on 2 cores 292 connects released at once cost k6 itself up to a few hundred ms, which the
  # parts' prediction does not model: a mismatch there is not this test's subject.)
  run lt_row_value "$ONE" prediction_notes
  assert_output --partial "bound by k6's open-file limit: 1 k6 process(es) x (300 files less 8 of k6's own) = 292 connections for 400 VUs; the others fail with 'too many open files' (fail_no_fd)"
  refute_output --regexp '(server_conns_peak|failed_reqs|fail_no_fd|fail_connect|listen_overflows|syn_retrans) [0-9.]+ where'
  if [ "$(lt_row_value "$ONE" prediction_check)" = mismatch ]; then
    assert_output --regexp '(t_connect_p99_ms|t_queued_p99_ms) [0-9.]+ where'
  fi
  # The limits the cell ran with: k6's, and the target's with the files its JVM held.
  run awk -F '\t' '$1 == "k6" { print $2 } $1 == "target" { print ($2 >= 1024 && $3 > 0) }' "$RUN_DIR/cells/$ONE/file-limits.tsv"
  assert_output "$(printf '300\n1')"
}

@test "K6_INSTANCES=auto runs two processes for the same users: every user connects" {
  [ "$(lt_cell_value "$AUTO" K6_INSTANCES)" = 2 ]
  [ -s "$RUN_DIR/cells/$AUTO/k6-2.log" ]
  [ "$(lt_row_value "$AUTO" predicted_server_conns_peak)" -eq 400 ]
  [ "$(lt_row_value "$AUTO" fail_no_fd)" -eq 0 ]
  [ "$(lt_row_value "$AUTO" failed_reqs)" -eq 0 ]
  [ "$(lt_row_value "$AUTO" server_conns_peak)" -ge 400 ]
  run lt_row_value "$AUTO" prediction_notes
  refute_output --partial "open-file limit"
  # Its percentiles from both processes' merged histograms: every user waited its 3 s.
  [ "$(lt_row_value "$AUTO" lat_med_ms | cut -d. -f1)" -ge 3000 ]
  run lt_row_value "$AUTO" notes
  assert_output --partial "latency percentiles from the merged histograms of 2 k6 processes (400 answered requests;"
}

@test "a cell whose users need more memory than this machine has is refused before anything starts" {
  printf '%s\n' SCENARIO=burst VUS=1000000 MONITORING=off >"$BATS_TEST_TMPDIR/big.matrix"
  LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results" run "$LT_ROOT/scripts/run-matrix.sh" "$BATS_TEST_TMPDIR/big.matrix"
  assert_failure 2
  assert_output --regexp "cannot run as designed on this machine: cell 01: 1000000 VUs need at least 234375 MB in k6 \(240-420 KB each, measured\), more than the [0-9]+ MB available"
  [ ! -e "$BATS_TEST_TMPDIR/results" ]
}

@test "the target's own open-file limit bounds its connections, less the files its JVM holds, and the note says so" {
  # The runner started with 600 files (prlimit on the process this test
  # starts); the JVM inherits them unless the runner may raise its hard
  # limit (CAP_SYS_RESOURCE), so the expectation is computed from the limit
  # the cell recorded. No warm-up: the JVM's own files are counted just before
  # the load, and a warm-up's last sockets, still closing, were once among them
  # (the prediction 2 low: 639 against 641 connected).
  printf '%s\n' SCENARIO=burst VUS=800 REQUESTS_PER_VU=1 DELAY_MS=4000 BURST_LEAD_MS=1500 DURATION=2s \
    GRACEFUL_STOP=8s REQUEST_TIMEOUT=10s TOMCAT_MAX_THREADS=800 TOMCAT_MAX_CONNECTIONS=2000 K6_HTML_REPORT=0 \
    MONITORING=off WARMUP=0s >"$BATS_TEST_TMPDIR/srv.matrix"
  LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results" run prlimit --nofile=600:600 "$LT_ROOT/scripts/run-matrix.sh" "$BATS_TEST_TMPDIR/srv.matrix"
  assert_success
  local dir limit own expected peak
  dir="$(readlink -f "$BATS_TEST_TMPDIR/results/latest")/cells/01"
  limit="$(awk -F '\t' '$1 == "target" { print $2 }' "$dir/file-limits.tsv")"
  own="$(awk -F '\t' '$1 == "target" { print $3 }' "$dir/file-limits.tsv")"
  ((own > 10 && own < 200)) || fail "the JVM's own files: '$own'"
  # Tomcat accepts limit - own, the accept queue holds backlog (100) + 1.
  expected=$((limit - own + 101 < 800 ? limit - own + 101 : 800))
  [ "$(jq .predicted_server_conns_peak "$dir/row.json")" -eq "$expected" ]
  peak="$(jq .server_conns_peak "$dir/row.json")"
  ((peak <= expected + 1 && peak >= expected - 10)) || fail "server_conns_peak $peak, predicted $expected"
  run jq -r .prediction_notes "$dir/row.json"
  if ((expected < 800)); then
    assert_output --partial "bound by the target's open-file limit: $limit files less the $own its JVM had open before the load, plus the accept queue = $expected connections, fewer than TOMCAT_MAX_CONNECTIONS=2000 allows (2101)"
    grep -qi "too many open files" "$dir/target.log"
  else
    refute_output --partial "open-file limit"
  fi
  # k6 had the same 600 files: auto ran two processes for 800 users.
  [ "$(sed -n 's/^K6_INSTANCES=//p' "$dir/cell.env")" = "$((limit == 600 ? 2 : 1))" ]
}
