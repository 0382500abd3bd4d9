#!/usr/bin/env bats
# Small pieces of the cell engine (scripts/lib/cell.sh).

setup() {
  load '../test_helper'
  lt_source_libs cell
}

@test "cell_url_port: the port a target URL names, else its scheme's" {
  run cell_url_port http://127.0.0.1:18080/path?x=1
  assert_output 18080
  run cell_url_port https://user:pw@example.test:8443
  assert_output 8443
  run cell_url_port http://127.0.0.1/
  assert_output 80
  run cell_url_port 'https://[::1]/health'
  assert_output 443
  run cell_url_port 'http://[::1]:9090/'
  assert_output 9090
}

@test "seconds_since_us: the seconds since a time of bash's clock, to the hundredth" {
  local now="${EPOCHREALTIME/[.,]/}"
  run seconds_since_us "$((now - 2345000))"
  assert_output --regexp '^2\.(3[5-9]|[4-9][0-9])$'
  run seconds_since_us "$((now - 4000))"
  assert_output --regexp '^0\.[0-9][0-9]$'
}

# finish_stub LINE SECONDS: cell_finish_steps replaced by one that takes
# SECONDS, says LINE and marks `finished` in the cell's phases.tsv, and
# records its own open descriptors and the signals it ignores.
finish_stub() {
  eval "cell_finish_steps() {
    ls /proc/\$BASHPID/fd >\"\$1/fds\"
    grep '^SigIgn' /proc/\$BASHPID/status >\"\$1/sigign\"
    sleep $2
    say '$1'
    phase_mark \"\$1\" finished
  }"
}

@test "a cell's finish runs in the background; its line is said at the join, before the next cell's first line" {
  local dir="$BATS_TEST_TMPDIR/cells/01"
  mkdir -p "$dir"
  finish_stub "  ok in 3s: tps=1" 0.5
  local before="${EPOCHREALTIME/[.,]/}"
  cell_finish_begin "$dir" ok "" 1.0 0 1 "$SECONDS"
  # It returned at once, the finish still running.
  [ $(((${EPOCHREALTIME/[.,]/} - before) / 1000)) -lt 300 ]
  [ -n "$CELL_FINISH_PID" ]
  kill -0 "$CELL_FINISH_PID"
  CELL_HEADER="cell 2/2 02"
  # In this shell: only the shell that started the finish can wait for it.
  cell_finish_join 2>"$BATS_TEST_TMPDIR/said"
  run cat "$BATS_TEST_TMPDIR/said"
  assert_output $'  ok in 3s: tps=1\ncell 2/2 02'
  [ -z "$CELL_FINISH_PID" ]
  # Reported once its finish had ended.
  run cut -f1 "$dir/phases.tsv"
  assert_output $'finished\nreported'
}

@test "a cell's finish keeps the run lock's descriptor closed and goes on through SIGHUP and Ctrl-C" {
  local dir="$BATS_TEST_TMPDIR/cells/01"
  mkdir -p "$dir"
  finish_stub "  ok in 3s: tps=1" 0.5
  exec 9>"$BATS_TEST_TMPDIR/lock"
  cell_finish_begin "$dir" ok "" 1.0 0 1 "$SECONDS"
  exec 9>&-
  local i
  for ((i = 0; i < 50; i++)); do [[ -s "$dir/sigign" ]] && break; sleep 0.02; done
  kill -HUP "$CELL_FINISH_PID"
  kill -INT "$CELL_FINISH_PID"
  cell_finish_wait 2>"$BATS_TEST_TMPDIR/said"
  run cat "$BATS_TEST_TMPDIR/said"
  assert_output "  ok in 3s: tps=1"
  run grep -x 9 "$dir/fds"
  assert_failure
  # SIGHUP (1) and SIGINT (2) ignored: bits 0 and 1 of the mask.
  [ $((16#$(awk '{ print $2 }' "$dir/sigign") & 3)) -eq 3 ]
}

@test "a full disk after a cell's finish stops the run at the join, as interrupted, the cell dropped" {
  local dir="$BATS_TEST_TMPDIR/cells/01" status=0
  mkdir -p "$dir"
  cell_finish_steps() { exit 3; }
  space_stop_when_full() { say "no space left (stub)"; rm -rf "$1"; return 1; }
  # Begun and joined in one shell (the runner's), which the join ends.
  (
    LT_INTERRUPTED=0
    trap 'echo "interrupted=$LT_INTERRUPTED" >&2' EXIT
    cell_finish_begin "$dir" ok "" 1.0 0 1 "$SECONDS"
    CELL_HEADER="cell 2/2 02"
    cell_finish_join
    echo "not reached" >&2
  ) 2>"$BATS_TEST_TMPDIR/said" || status=$?
  [ "$status" -eq 1 ]
  run cat "$BATS_TEST_TMPDIR/said"
  assert_output $'no space left (stub)\ninterrupted=1'
  [ ! -e "$dir" ]
}

@test "no finish running: the join says the cell's first line at once, and waiting does nothing" {
  CELL_FINISH_PID=""
  # shellcheck disable=SC2034 # SC2034: read by cell_say_header (cell.sh)
  CELL_HEADER="cell 1/2 01"
  run cell_finish_join
  assert_success
  assert_output "cell 1/2 01"
  run cell_finish_wait
  assert_success
  assert_output ""
}

@test "a cell's failure reason has one writer: cell_error; no other line of the suite's shell sets CELL_ERROR" {
  # Every mention of the name that is not a read ($CELL_ERROR, ${CELL_ERROR...}) nor a comment.
  run bash -c 'cd "$1" && grep -nE "CELL_ERROR" scripts/*.sh scripts/lib/*.sh \
    | grep -vE "^[^:]+:[0-9]+:[[:space:]]*#" | grep -vE "^[^:]+:[0-9]+:.*cell_error " \
    | sed -E "s/\\$\\{?CELL_ERROR//g" | grep -E "CELL_ERROR"' _ "$LT_ROOT"
  local declared assigned
  declared="$(grep -nxF 'CELL_ERROR=""' "$LT_ROOT/scripts/lib/common.sh" | cut -d: -f1)"
  # shellcheck disable=SC2016 # SC2016: the literal line of cell_error's body, $1 and all
  assigned="$(grep -nxF '  CELL_ERROR="$1"' "$LT_ROOT/scripts/lib/common.sh" | cut -d: -f1)"
  assert_output "scripts/lib/common.sh:$declared:CELL_ERROR=\"\"
scripts/lib/common.sh:$assigned:  CELL_ERROR=\"\$1\""
}

@test "cell_step: a failed step's own reason is kept, and a step that said none is named" {
  said() { cell_error "nginx did not start"; return 1; }
  silent() { return 3; }
  cell_error ""
  cell_step "the proxy" said || true
  [ "$CELL_ERROR" = "nginx did not start" ]
  cell_error ""
  cell_step "the delayer" silent || true
  [ "$CELL_ERROR" = "the delayer failed" ]
  cell_error ""
  cell_step "the delayer" true
  [ -z "$CELL_ERROR" ]
}
