#!/usr/bin/env bats
# The warm-up before a cell's measured load (WARMUP): the knob, its default
# by the kind of target, and the runner's pieces of scripts/lib/warmup.sh
# that need no namespace.
# shellcheck disable=SC2034,SC2030,SC2031 # SC2034: assigned through a nameref, or read by the sourced library under test; SC2030/SC2031: each test sets LT_K6 and HTTP_PID in its own subshell, read by its helpers and teardown

setup() {
  load '../test_helper'
  lt_source_libs envfile matrix netns target k6 live cell warmup
  lt_untraced knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  matrix_init
  LT_PROG='test'
}

@test "WARMUP is a duration knob, 2s by default (ended by time); 0s and a duration are taken, a bare number is refused" {
  [ "${KNOB_TYPE[WARMUP]}" = duration ]
  [ "${KNOB_DEFAULT[WARMUP]}" = 2s ]
  [ "${KNOB_TYPE[WARMUP_UNTIL]}" = 'enum:time|settled|count' ]
  [ "${KNOB_DEFAULT[WARMUP_UNTIL]}" = time ]
  [ "${KNOB_TYPE[WARMUP_REQUESTS]}" = count ]
  printf 'WARMUP_UNTIL=requests\n' | lt_write "$BATS_TEST_TMPDIR/until.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/until.matrix"
  assert_failure 2
  assert_output --partial "until.matrix:1: WARMUP_UNTIL"
  printf 'WARMUP=0s 5s 1m30s\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  [ "${MATRIX_VALUE[WARMUP]}" = "0s 5s 1m30s" ]
  printf 'WARMUP=5\n' | lt_write "$BATS_TEST_TMPDIR/bad.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/bad.matrix"
  assert_failure 2
  assert_output --partial "bad.matrix:1: WARMUP"
}

# watched UNTIL CELL_DIR START [COUNT]: a process that stands for the warm-up's
# k6 (it ends on SIGINT, as k6 under a foreground timeout does; 30 s at most),
# watched as warmup_run has it watched: by the cell's live process
# (live_start_with_warmup, the real ltsuite.live; no live line to show), then
# waited for. Prints its exit status and whether the live process ended.
watched() {
  local until="$1" cell_dir="$2" start="$3" status=0
  local -a rule=()
  [[ "$until" != count ]] || rule=("$4")
  # (A background process of a script ignores SIGINT; k6 under timeout does not.)
  "$LT_PYTHON" -c 'import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); time.sleep(30)' &
  local k6=$!
  LT_LIVE=off live_start_with_warmup "$cell_dir" "${ACCESS_LOG:-$cell_dir/tomcat-access.log}" 20 1 "$start" 20 \
    "$k6" "${rule[@]}"
  wait "$k6" || status=$?
  local live="running" tries
  for ((tries = 0; tries < 100; tries++)); do
    kill -0 "$LIVE_PID" 2>/dev/null || { live="ended"; break; }
    sleep 0.05
  done
  wait "$LIVE_PID" || true
  LIVE_PID=""
  printf '%s %s\n' "$status" "$live"
}

@test "WARMUP_UNTIL=settled: the cell's live process ends the warm-up's k6 once the application's time settled, and starts no line of its own" {
  # A recorded warm-up's access log (Spring PetClinic, 30 s at 2 threads: it settled at its
  # second 25, tests/python/test_warmsettle.py).
  local cell_dir="$BATS_TEST_TMPDIR/cell" start
  cp -r "$LT_ROOT/tests/python/fixtures/advise-petclinic/calibrate" "$cell_dir"
  start="$(awk -F '\t' '$1 == "warmup_start" { print $2 }' "$cell_dir/phases.tsv")"
  # Read where the running target writes it (a container's log, through its JVM's /proc/PID/root:
  # backend_access_log), not from the cell's directory.
  mkdir "$BATS_TEST_TMPDIR/container"
  mv "$cell_dir/tomcat-access.log" "$BATS_TEST_TMPDIR/container/"
  ACCESS_LOG="$BATS_TEST_TMPDIR/container/tomcat-access.log"
  run watched settled "$cell_dir" "$start"
  # It was sent SIGINT, as k6 is to write its summary and end.
  assert_output "$((128 + 2)) ended"
  [ "$(jq -r '.ended_by + " " + (.settled_second | tostring)' "$cell_dir/warmup-settle.json")" = "settled 25" ]
  # Nothing to settle on (no access log: a TARGET_CMD server): it ends when its k6 does, by time.
  rm "$ACCESS_LOG"
  sleep 1 &
  LT_LIVE=off live_start_with_warmup "$cell_dir" "$ACCESS_LOG" 20 1 "$start" 20 "$!"
  wait "$!" || true
  wait "$LIVE_PID"
  LIVE_PID=""
  [ "$(jq -r .ended_by "$cell_dir/warmup-settle.json")" = time ]
}

@test "WARMUP_UNTIL=count: the cell's live process ends the warm-up's k6 once Tomcat logged WARMUP_REQUESTS of its requests" {
  # The recorded warm-up logged more than 500 requests after its start.
  local cell_dir="$BATS_TEST_TMPDIR/cell" start logged
  cp -r "$LT_ROOT/tests/python/fixtures/advise-petclinic/calibrate" "$cell_dir"
  start="$(awk -F '\t' '$1 == "warmup_start" { print $2 }' "$cell_dir/phases.tsv")"
  logged="$(awk -v start="$start" '$1 >= start' "$cell_dir/tomcat-access.log" | wc -l)"
  ((logged > 500))
  run watched count "$cell_dir" "$start" 500
  assert_output "$((128 + 2)) ended"
  [ "$(jq -c '[.ended_by, .count, .counted]' "$cell_dir/warmup-settle.json")" = "[\"count\",500,$logged]" ]
  # More than were logged: it ends with its k6, by time.
  sleep 1 &
  LT_LIVE=off live_start_with_warmup "$cell_dir" "$cell_dir/tomcat-access.log" 20 1 "$start" 20 "$!" $((logged + 1))
  wait "$!" || true
  wait "$LIVE_PID"
  LIVE_PID=""
  [ "$(jq -c '[.ended_by, .counted]' "$cell_dir/warmup-settle.json")" = "[\"time\",$logged]" ]
}

@test "a watched warm-up's k6 the runner already waited for: the watch takes no later process of its pid for it" {
  local cell_dir="$BATS_TEST_TMPDIR/cell" start other status=0
  cp -r "$LT_ROOT/tests/python/fixtures/advise-petclinic/calibrate" "$cell_dir"
  start="$(awk -F '\t' '$1 == "warmup_start" { print $2 }' "$cell_dir/phases.tsv")"
  # Another process in the place of the warm-up's k6: its pid, a later start than the one
  # the runner read (as when the pid was reaped and given again).
  "$LT_PYTHON" -c 'import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); time.sleep(30)' &
  other=$!
  PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.live --no-line --warmup-cell "$cell_dir" \
    --warmup-start-ms "$start" --warmup-limit-s 20 --warmup-pid "$other" --warmup-started 1
  kill -0 "$other" || fail "the watch sent SIGINT to a process that was not the warm-up's"
  kill "$other"
  wait "$other" || status=$?
  [ "$status" = $((128 + 15)) ]
  # The recorded time settled, and there was no warm-up's k6 left to end.
  [ "$(jq -r .ended_by "$cell_dir/warmup-settle.json")" = settled ]
}

@test "the warm-up is the runner's, not a scenario a cell may choose" {
  printf 'SCENARIO=warmup\n' | lt_write "$BATS_TEST_TMPDIR/m.matrix"
  run matrix_load "$BATS_TEST_TMPDIR/m.matrix"
  assert_failure 2
  assert_output --partial "m.matrix:1: SCENARIO: 'warmup' is not one of: "
  refute_output --partial ', warmup'
}

@test "WARMUP=0s: no warm-up, no k6, no mark and no file" {
  local -A cell=([WARMUP]=0s)
  LT_K6=/nonexistent/k6
  mkdir -p "$BATS_TEST_TMPDIR/cell"
  run warmup_run cell "$BATS_TEST_TMPDIR/cell" http://198.18.0.1:8080 8080
  assert_success
  assert_output ''
  run ls -A "$BATS_TEST_TMPDIR/cell"
  assert_output ''
}

@test "the warm-up's sockets are told from the suite's own by the client's ephemeral range, on the users' port" {
  run warmup_ss_filter client 8090 32768 60999
  assert_output '( dport = :8090 and sport >= :32768 and sport <= :60999 )'
  run warmup_ss_filter server 8080 1024 65535
  assert_output '( sport = :8080 and dport >= :1024 and dport <= :65535 )'
  # nginx's to the target: either end, from the server namespace's range.
  run warmup_ss_filter upstream 8080 32768 60999
  assert_output '( ( sport = :8080 and dport >= :32768 and dport <= :60999 ) or ( dport = :8080 and sport >= :32768 and sport <= :60999 ) )'
}

@test "the warm-up's sockets: the client's and the server's; nginx's towards the target only with nginx in front" {
  # shellcheck disable=SC2317 # SC2317: called by warmup_sockets, which the test runs
  netns_exec() { [[ "$*" == *ip_local_port_range ]] && printf '%s\n' "${RANGE_OF[$1]}"; }
  # shellcheck disable=SC2317 # SC2317: called by warmup_sockets, which the test runs
  backend_has_server_side() { return 0; }
  local -A RANGE_OF=([client]="32768 60999" [server]="40000 50000")
  run warmup_sockets 8080 8080
  assert_output "$(printf '%s\n' 'client client ( dport = :8080 and sport >= :32768 and sport <= :60999 )' \
    'server server ( sport = :8080 and dport >= :32768 and dport <= :60999 )')"
  run warmup_sockets 8090 8080
  assert_line --index 1 'server server ( sport = :8090 and dport >= :32768 and dport <= :60999 )'
  assert_line --index 2 'upstream server ( ( sport = :8080 and dport >= :40000 and dport <= :50000 ) or ( dport = :8080 and sport >= :40000 and sport <= :50000 ) )'
  # No server side to see (an external target): the client's only.
  # shellcheck disable=SC2317 # SC2317: called by warmup_sockets, which the test runs
  backend_has_server_side() { return 1; }
  run warmup_sockets 8090 8080
  assert_output 'client client ( dport = :8090 and sport >= :32768 and sport <= :60999 )'
}

# warmup_k6 PORT WARMUP KEEP_ALIVE OUT: scenarios/lib/warmup.js against
# python's http.server on 127.0.0.1:PORT, 4 VUs (threads and connections
# past them), TOMCAT_MAX_KEEP_ALIVE_REQUESTS=KEEP_ALIVE; its summary in OUT.
warmup_k6() {
  "$LT_K6" run -q --address "" -e "TARGET_URL=http://127.0.0.1:$1" -e SCENARIO=spike -e TARGET_PATH=/ok \
    -e "WARMUP=$2" -e REQUEST_TIMEOUT=2s -e "TOMCAT_MAX_KEEP_ALIVE_REQUESTS=$3" -e TOMCAT_MAX_THREADS=200 \
    -e TOMCAT_MAX_CONNECTIONS=100 -e "SUMMARY_FILE=$4" "$LT_ROOT/scenarios/lib/warmup.js"
}

@test "a longer WARMUP sends more requests at the same pace, not the same requests slower" {
  local port i
  mkdir -p "$BATS_TEST_TMPDIR/www"
  echo ok >"$BATS_TEST_TMPDIR/www/ok"
  port="$(lt_free_port)"
  python3 -m http.server --bind 127.0.0.1 --directory "$BATS_TEST_TMPDIR/www" "$port" >/dev/null 2>&1 3>&- &
  HTTP_PID=$!
  for ((i = 0; i < 50; i++)); do
    curl -fs -o /dev/null "http://127.0.0.1:$port/ok" && break
    sleep 0.1
  done
  # 99 a connection, over 1 s: one connection's worth a VU, 10 ms apart (WARMUP=5s's 99, faster).
  run warmup_k6 "$port" 1s 100 "$BATS_TEST_TMPDIR/short.json"
  assert_success
  # 4 VUs x 99 planned; a request due after the 1 s (the last at 980 ms) on a busy machine is not
  # sent, so up to a tenth fewer: before, 2 a VU, 8 in all.
  jq -e '.warmup.per_vu == 99 and .metrics.http_reqs.values.count <= 396 and .metrics.http_reqs.values.count >= 356' "$BATS_TEST_TMPDIR/short.json"
  # 2 a connection, over 1 s: ten connections' worth a VU, 50 ms apart (before: 2 a VU, 500 ms apart).
  run warmup_k6 "$port" 1s 3 "$BATS_TEST_TMPDIR/long.json"
  assert_success
  jq -e '.warmup.per_vu == 20 and .warmup.pace_ms == 50' "$BATS_TEST_TMPDIR/long.json"
  jq -e '.metrics.http_reqs.values.count <= 80 and .metrics.http_reqs.values.count >= 72 and .metrics.http_req_failed.values.passes == 0' "$BATS_TEST_TMPDIR/long.json"
}

@test "a /hello whose delay could not end within the warm-up is asked without it, so no warm-up request holds a thread into the load" {
  # The path's query only: /hello?delayMs=... answers 404 from a plain file server, which k6 counts.
  local port
  mkdir -p "$BATS_TEST_TMPDIR/www"
  port="$(lt_free_port)"
  python3 -m http.server --bind 127.0.0.1 --directory "$BATS_TEST_TMPDIR/www" "$port" >/dev/null 2>&1 3>&- &
  HTTP_PID=$!
  local delay
  for delay in 300 1000 30000; do
    "$LT_K6" run -q --address "" -e "TARGET_URL=http://127.0.0.1:$port" -e SCENARIO=spike -e "DELAY_MS=$delay" \
      -e WARMUP=1s -e REQUEST_TIMEOUT=2s -e TOMCAT_MAX_KEEP_ALIVE_REQUESTS=100 -e TOMCAT_MAX_THREADS=1 \
      -e TOMCAT_MAX_CONNECTIONS=1 -e "SUMMARY_FILE=$BATS_TEST_TMPDIR/$delay.json" "$LT_ROOT/scenarios/lib/warmup.js" >/dev/null 2>&1 || true
  done
  [ "$(jq -r .warmup.path "$BATS_TEST_TMPDIR/300.json")" = "/hello?delayMs=300" ]
  [ "$(jq -r .warmup.path "$BATS_TEST_TMPDIR/1000.json")" = "/hello?delayMs=0" ]
  [ "$(jq -r .warmup.path "$BATS_TEST_TMPDIR/30000.json")" = "/hello?delayMs=0" ]
}

teardown() {
  [[ -z "${HTTP_PID:-}" ]] || lt_end "$HTTP_PID"
}
