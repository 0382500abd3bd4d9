#!/usr/bin/env bats
# Where each user's time went: the application's own account of every request
# (Tomcat's access log, turned on by Spring Boot's properties) beside k6's,
# and each request split into connect, queued, service and rest, on cells
# with known answers (tests/fixtures/time-parts*.matrix): waves on two
# threads, users past a full accept queue, and a Spring Boot jar of one's own
# without a line of its code changed. Then the report draws them.
# shellcheck disable=SC2016 # SC2016: jq programs in single quotes on purpose

# time_parts_run NAME MATRIX: one run of MATRIX into its own results
# directory (BATS_FILE_TMPDIR/NAME); its output in NAME.log, its status in
# NAME.status.
time_parts_run() {
  local name="$1" matrix="$2" status=0
  LT_RESULTS_DIR="$BATS_FILE_TMPDIR/$name" "$LT_ROOT/scripts/run-matrix.sh" "$matrix" \
    >"$BATS_FILE_TMPDIR/$name.log" 2>&1 || status=$?
  printf '%s\n' "$status" >"$BATS_FILE_TMPDIR/$name.status"
}

setup_file() {
  load '../test_helper'
  [[ $EUID -eq 0 ]] || return 0
  time_parts_run waves "$LT_ROOT/tests/fixtures/time-parts.matrix"
  time_parts_run queue "$LT_ROOT/tests/fixtures/time-parts-queue.matrix"
  # The matrix's paths are relative to the repository's root.
  (cd "$LT_ROOT" && time_parts_run ownapp tests/fixtures/time-parts-ownapp.matrix)
}

setup() {
  load '../test_helper'
  bats_require_minimum_version 1.5.0
}

# run_dir NAME: the run directory of the run NAME, after checking it succeeded.
run_dir() {
  [ "$(cat "$BATS_FILE_TMPDIR/$1.status")" -eq 0 ] || fail "$(tail -n 30 "$BATS_FILE_TMPDIR/$1.log")"
  readlink -f "$BATS_FILE_TMPDIR/$1/latest"
}

# row NAME CELL KEY: a value of the row of CELL in the run NAME.
row() {
  jq -r --arg k "$3" '.[$k] // "null"' "$(run_dir "$1")/cells/$2/row.json"
}

# near VALUE WANT TOLERANCE: VALUE is within TOLERANCE of WANT.
near() {
  awk -v v="$1" -v w="$2" -v t="$3" 'BEGIN { d = v - w; if (d < 0) d = -d; exit !(v != "null" && d <= t) }' \
    || fail "$1 is not within $3 of $2"
}

@test "Spring Boot's access-log properties: one unbuffered file in the given directory, in the pattern the reader knows" {
  lt_source_libs envfile matrix netns results target
  run target_accesslog_env /data/cell
  assert_output "$(printf '%s\n' SERVER_TOMCAT_ACCESSLOG_ENABLED=true SERVER_TOMCAT_ACCESSLOG_DIRECTORY=/data/cell \
    SERVER_TOMCAT_ACCESSLOG_PREFIX=tomcat-access SERVER_TOMCAT_ACCESSLOG_SUFFIX=.log \
    SERVER_TOMCAT_ACCESSLOG_ROTATE=false SERVER_TOMCAT_ACCESSLOG_BUFFERED=false \
    'SERVER_TOMCAT_ACCESSLOG_PATTERN=%{begin:msec}t %D %s %{remote}p %{X-Request-Id}i %m %U')"
  local -A cell=([SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081)
  run target_spring_env cell 198.18.0.1
  refute_output --partial ACCESSLOG
  run target_spring_env cell 198.18.0.1 /data/cell
  assert_line SERVER_TOMCAT_ACCESSLOG_DIRECTORY=/data/cell
}

@test "the Grafana panel of the parts reads the fields ltsuite_time_parts is written with" {
  local query
  query="$(jq -r '.panels[] | select(.title | startswith("Where the users")) | .targets[0].query' \
    "$LT_ROOT/grafana/dashboards/connection-path.json")"
  [[ "$query" == *'FROM "ltsuite_time_parts"'* ]] || fail "$query"
  run grep -o 'mean("[a-z_]*")' <<<"$query"
  assert_output "$(printf 'mean("%s")\n' connect_ms queued_ms service_ms rest_ms)"
}

@test "waves: 8 users on 2 threads, all connected: service is DELAY_MS, the last wave waits 3 x 400 ms, connecting costs nothing" {
  lt_require_root
  [ "$(row waves 01 status)" = ok ]
  [ "$(row waves 01 http_reqs)" -eq 8 ]
  [ "$(row waves 01 app_reqs)" -eq 8 ]
  [ "$(row waves 01 decomposed_reqs)" -eq 8 ]
  [ "$(row waves 01 reqs_never_seen_by_app_connect_failed)" -eq 0 ]
  [ "$(row waves 01 reqs_never_seen_by_app_never_read)" -eq 0 ]
  [ "$(row waves 01 parts_out_of_order)" -eq 0 ]
  # Within 5 % of the 400 ms the target sleeps.
  near "$(row waves 01 t_service_med_ms)" 400 20
  near "$(row waves 01 app_lat_med_ms)" 400 20
  [ "$(row waves 01 predicted_t_queued_p99_ms)" -eq 1200 ]
  near "$(row waves 01 t_queued_p99_ms)" 1200 90
  [ "$(row waves 01 predicted_t_connect_p99_ms)" -eq 0 ]
  near "$(row waves 01 t_connect_p99_ms)" 0 20
  [ "$(row waves 01 prediction_check)" = match ]
}

@test "waves: each request's parts, in four waves of two, add up to k6's blocked + duration within the tolerance" {
  lt_require_root
  local cell
  cell="$(run_dir waves)/cells/01"
  run python3 -c '
import sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from ltsuite import accesslog, timeparts
joined = timeparts.join(timeparts.cell_k6_requests(Path(sys.argv[2])), accesslog.cell_load_requests(Path(sys.argv[2])))
for p in joined.parts:
    assert abs(p.connect + p.queued + p.service + p.rest - p.whole) < 1e-6
    assert p.off_by() <= timeparts.TOLERANCE_MS, p
print(" ".join(str(round(p.queued / 400)) for p in sorted(joined.parts, key=lambda p: p.queued)))
' "$LT_ROOT/scripts" "$cell"
  assert_success
  assert_output "0 0 1 1 2 2 3 3"
}

@test "a full queue: the users past it connect at the SYN schedule's retransmits once answers free room" {
  lt_require_root
  [ "$(row queue 01 status)" = ok ]
  [ "$(row queue 01 failed_reqs)" -eq 0 ]
  [ "$(row queue 01 syn_retrans)" -gt 0 ]
  [ "$(row queue 01 decomposed_reqs)" -eq 8 ]
  # Every connect time is a SYN's time: the first, or a retransmit at a whole
  # second (linear timeouts), within 150 ms; capacity 4, so at least four
  # users waited for a retransmit, some until the first answers (1.3 s) had
  # freed room: 2 s or later.
  run bash -c "PYTHONPATH='$LT_ROOT/scripts' python3 -m ltsuite.timeparts bars '$(run_dir queue)/cells/01' \
    | jq -c '[.bars[] | .[1] / 1000] | [(map(. - round | fabs) | max < 0.15), (map(select(. > 0.5)) | length >= 4),
        (map(round) | max >= 2)]'"
  assert_output '[true,true,true]'
  [ "$(row queue 01 predicted_t_connect_p99_ms)" -eq 3000 ]
  # The prediction holds, or the row says which SYNs the listener dropped
  # with room in the queue (its limit of half-open handshakes, backlog 1
  # here): those users connected a retransmit earlier or later than the
  # waves say.
  local check notes
  check="$(row queue 01 prediction_check)"
  notes="$(row queue 01 prediction_notes)"
  [[ "$check" == match || "$notes" == *"SYNs were dropped while the accept queue had room (ListenDrops "* ]] \
    || fail "prediction $check: $notes"
}

@test "a jar of one's own gets the application's columns without code, and a script gets the split, unchanged or sending the id" {
  lt_require_root
  local dir cell script
  dir="$(run_dir ownapp)"
  for cell in "$dir"/cells/*/; do
    cell="$(basename "$cell")"
    script="$(row ownapp "$cell" scenario)"
    [ "$(row ownapp "$cell" status)" = ok ]
    # Every request k6 sent, the application logged: 1 s each (greeting.env),
    # within 10 %.
    [ "$(row ownapp "$cell" app_reqs)" -eq "$(row ownapp "$cell" http_reqs)" ]
    near "$(row ownapp "$cell" app_lat_med_ms)" 1000 100
    [ "$(row ownapp "$cell" reqs_never_seen_by_app_never_read)" -eq 0 ]
    # The unchanged script's requests get their ids from the entry module,
    # the other's from its own withRequestId: every request split either way.
    case "$script" in
      *spike-test.js | *time-parts-own-script.js)
        [ "$(row ownapp "$cell" decomposed_reqs)" -eq "$(row ownapp "$cell" http_reqs)" ]
        near "$(row ownapp "$cell" t_service_med_ms)" 1000 100
        ;;
      *) fail "unexpected scenario $script" ;;
    esac
  done
  [ "$(find "$dir/cells" -name tomcat-access.log | wc -l)" -eq 2 ]
}

@test "report.html draws each request's parts and the two latency distributions, in Chromium, with no error" {
  lt_require_root
  local dir page
  dir="$(run_dir queue)"
  page="$BATS_FILE_TMPDIR/queue-page.json"
  node "$LT_ROOT/scripts/report/open-report.js" "$dir/report.html" --screenshot "$BATS_FILE_TMPDIR/parts.png" \
    --at '#chart-01-time-parts' >"$page" || fail "open-report.js failed"
  run jq -c '.errors' "$page"
  assert_output '[]'
  # The rest can be under a pixel wide: only its values are checked.
  run jq -c '[.charts[] | select(.id == "chart-01-time-parts") | .series[] | {label: .label, points: .points, drawn: (.label == "rest" or .pixels > 0)}]' "$page"
  assert_output '[{"label":"connect","points":8,"drawn":true},{"label":"queued","points":8,"drawn":true},{"label":"service","points":8,"drawn":true},{"label":"rest","points":8,"drawn":true}]'
  run jq -c '[.charts[] | select(.id == "chart-01-app-vs-users") | .series[] | {points, drawn: (.pixels > 0)}]' "$page"
  assert_output '[{"points":8,"drawn":true},{"points":8,"drawn":true}]'
  [ -s "$BATS_FILE_TMPDIR/parts.png" ]
}
