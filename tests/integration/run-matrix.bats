#!/usr/bin/env bats
# The default matrix, run for real: target, k6, namespaces and kernel counters.
# One run in setup_file; every test reads its files.

setup_file() {
  load '../test_helper'
  lt_require_root
  # The live line every 2 s (its output is no terminal here).
  export LT_LIVE_EVERY=2
  # Every program the run starts, as the kernel reports it (tests/tools/execwatch.py).
  lt_execwatch_start "$BATS_FILE_TMPDIR/execs.log"
  lt_run_matrix_once "$LT_ROOT/env/matrices/default.matrix"
  lt_execwatch_stop "$BATS_FILE_TMPDIR/execs.log"
  lt_python_starts <"$BATS_FILE_TMPDIR/execs.log" >"$BATS_FILE_TMPDIR/python-starts.log"
}

# execwatch_whole: fail when execwatch did not see the whole run.
execwatch_whole() {
  lt_execwatch_whole "$BATS_FILE_TMPDIR/execs.log"
}

setup() {
  load '../test_helper'
  lt_require_root
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  CSV="$RUN_DIR/results.csv"
}

@test "the run succeeds and prints progress and the table" {
  run cat "$BATS_FILE_TMPDIR/run.log"
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ]
  assert_output --partial "cell 1/4 01_accept_count-1_somaxconn-2"
  assert_output --partial "cell 4/4 04_accept_count-5_somaxconn-4096"
  assert_output --partial "| cell | status |"
}

@test "while a cell runs, a line shows the users so far and the server's connections and accept queue" {
  local cell users=0 started answered failed
  for cell in $(lt_cells); do
    # The cell's own lines: from its "cell N/4" line to its result line.
    run awk -v cell="$cell" '$0 ~ "^cell [0-9]+/[0-9]+ " cell "$" { on = 1; next } on && /^  (ok|failed) in / { exit } on' "$BATS_FILE_TMPDIR/run.log"
    assert_line --regexp '^  live [0-9]+s/[0-9]+s(: [0-9,]+ users started, [0-9,]+ requests answered, [0-9,]+ failed)? [|] server: [0-9,]+ conns, accept queue [0-9,]+/[0-9,]+'
    # The users' counts (from k6's samples file, which k6 writes 4 KiB at a
    # time) never exceed the row's.
    while read -r started answered failed; do
      users=$((users + 1))
      [ "$started" -le "$(lt_row_value "$cell" vus_started)" ]
      [ "$((answered + failed))" -le "$(lt_row_value "$cell" http_reqs)" ]
      [ "$failed" -le "$(lt_row_value "$cell" failed_reqs)" ]
    done < <(printf '%s\n' "${lines[@]}" | sed -nE 's/^  live [^:]*: ([0-9,]+) users started, ([0-9,]+) requests answered, ([0-9,]+) failed .*/\1 \2 \3/p' | tr -d ,)
  done
  [ "$users" -gt 0 ]
}

@test "the manifest records the run" {
  run jq -r '[.status, .matrix, (.matrix_sha256 | length), .backend, .cells_total, .cells_done] | @tsv' "$RUN_DIR/manifest.json"
  assert_output $'complete\tenv/matrices/default.matrix\t64\tnetns\t4\t4'
  [ "$(jq -r .matrix_sha256 "$RUN_DIR/manifest.json")" = "$(sha256sum "$LT_ROOT/env/matrices/default.matrix" | cut -d' ' -f1)" ]
  # The k6 that ran: the pinned one, or the one LT_K6 names.
  jq -e --arg k6 "$("${LT_K6:-$LT_ROOT/.tools/bin/k6}" version | head -n 1)" '.versions.k6 == $k6 and ($k6 | startswith("k6 v"))' \
    "$RUN_DIR/manifest.json"
  jq -e '.versions.kernel == "'"$(uname -r)"'"' "$RUN_DIR/manifest.json"
  jq -e '.versions.java | test("version")' "$RUN_DIR/manifest.json"
  jq -e '.ended_at != null and .started_at <= .ended_at' "$RUN_DIR/manifest.json"
}

@test "results.csv has a header and one row per cell with the contract's columns" {
  [ "$(wc -l <"$CSV")" -eq 5 ]
  local header
  header="$(head -n 1 "$CSV")"
  for column in run_id cell scenario status TOMCAT_ACCEPT_COUNT SOMAXCONN vus_max duration_s \
    http_reqs tps lat_min_ms lat_avg_ms lat_med_ms lat_p90_ms lat_p95_ms lat_p99_ms lat_max_ms \
    failed_reqs failed_rate iterations dropped_iterations listen_overflows listen_drops \
    syn_retrans server_conns_peak accept_queue_peak time_wait_peak error \
    fail_connect fail_reset fail_timeout fail_http_4xx fail_http_5xx fail_other; do
    [[ ",$header," == *",$column,"* ]] || fail "column $column missing from: $header"
  done
  run lt_csv_column "$CSV" status
  assert_output $'ok\nok\nok\nok'
}

@test "results.md shows the same rows" {
  for cell in $(lt_cells); do
    grep -q "^| $cell | ok |" "$RUN_DIR/results.md"
  done
}

@test "numeric columns parse as numbers" {
  for column in vus_max duration_s http_reqs tps lat_min_ms lat_med_ms lat_p99_ms lat_max_ms \
    failed_reqs failed_rate iterations listen_overflows listen_drops syn_retrans \
    server_conns_peak accept_queue_peak time_wait_peak; do
    while read -r value; do
      [[ "$value" =~ ^-?[0-9]+(\.[0-9]+)?$ ]] || fail "$column: '$value' is not a number"
    done < <(lt_csv_column "$CSV" "$column")
  done
}

@test "latency percentiles are ordered: min <= med <= p90 <= p95 <= p99 <= max" {
  for cell in $(lt_cells); do
    jq -e '.lat_min_ms <= .lat_med_ms and .lat_med_ms <= .lat_p90_ms and .lat_p90_ms <= .lat_p95_ms
           and .lat_p95_ms <= .lat_p99_ms and .lat_p99_ms <= .lat_max_ms and .lat_min_ms >= 0' \
      "$RUN_DIR/cells/$cell/row.json" || fail "$cell: percentiles out of order"
  done
}

@test "answered requests took at least the endpoint's delay" {
  for cell in $(lt_cells); do
    jq -e '.lat_min_ms >= 1000' "$RUN_DIR/cells/$cell/row.json" || fail "$cell"
  done
}

@test "failed_rate is within 0..1 and the causes add up to failed_reqs" {
  for cell in $(lt_cells); do
    jq -e '.failed_rate >= 0 and .failed_rate <= 1
           and (.fail_connect + .fail_reset + .fail_timeout + .fail_http_4xx + .fail_http_5xx + .fail_other) == .failed_reqs' \
      "$RUN_DIR/cells/$cell/row.json" || fail "$cell"
  done
}

@test "every cell has its files" {
  for cell in $(lt_cells); do
    for file in cell.env summary.json k6.log target.log sysctls.tsv samples.tsv netstat-delta.tsv \
      nstat-server-before.txt nstat-server-after.txt nstat-client-before.txt nstat-client-after.txt; do
      [ -s "$RUN_DIR/cells/$cell/$file" ] || fail "$cell/$file missing or empty"
    done
  done
}

@test "counter deltas are positive and agree with the snapshots" {
  for cell in $(lt_cells); do
    local dir="$RUN_DIR/cells/$cell"
    awk -F'\t' 'NR > 1 && $3 <= 0 { bad = 1 } END { exit bad }' "$dir/netstat-delta.tsv" \
      || fail "$cell: a delta <= 0"
    local before after delta
    before="$(awk '$1 == "TcpExtListenOverflows" { print $2 }' "$dir/nstat-server-before.txt")"
    after="$(awk '$1 == "TcpExtListenOverflows" { print $2 }' "$dir/nstat-server-after.txt")"
    delta="$(lt_row_value "$cell" listen_overflows)"
    [ "$delta" -eq $((after - before)) ]
  done
}

@test "the cell's sysctls were applied in its namespaces" {
  [ "$(lt_effective_sysctl 01_accept_count-1_somaxconn-2 server net.core.somaxconn)" = 2 ]
  [ "$(lt_effective_sysctl 02_accept_count-1_somaxconn-4096 server net.core.somaxconn)" = 4096 ]
  [ "$(lt_effective_sysctl 01_accept_count-1_somaxconn-2 client net.ipv4.tcp_syn_retries)" = 2 ]
}

@test "(a) at saturation the server holds max-connections + min(accept-count, somaxconn) + 1" {
  for cell in $(lt_cells); do
    lt_assert_saturated_capacity "$cell"
  done
}

@test "every saturated cell ran as designed and its predicted capacity matches, or the notes explain why" {
  for cell in $(lt_cells); do
    [ "$(lt_row_value "$cell" as_designed)" = 1 ] || fail "$cell: $(lt_row_value "$cell" design_notes)"
    [ "$(lt_row_value "$cell" vus_started)" = 16 ]
    [ "$(lt_row_value "$cell" predicted_server_conns_peak)" = "$(lt_row_value "$cell" queue_capacity)" ]
    lt_assert_prediction_kept "$cell"
  done
  run grep -c "4 of 4 cell(s) ran as designed" "$BATS_FILE_TMPDIR/run.log"
  assert_output 1
}

@test "(b) somaxconn caps accept-count: the listener's backlog is the smaller of the two" {
  [ "$(lt_row_value 03_accept_count-5_somaxconn-2 listen_backlog)" -eq 2 ]
  [ "$(lt_row_value 04_accept_count-5_somaxconn-4096 listen_backlog)" -eq 5 ]
  [ "$(lt_row_value 03_accept_count-5_somaxconn-2 server_conns_peak)" -lt "$(lt_row_value 04_accept_count-5_somaxconn-4096 server_conns_peak)" ]
}

@test "(c) clients beyond the queues fail and the listener's overflow counters grow" {
  for cell in $(lt_cells); do
    [ "$(lt_row_value "$cell" failed_reqs)" -gt 0 ] || fail "$cell: no failed request"
    [ "$(lt_row_value "$cell" listen_overflows)" -gt 0 ] || fail "$cell: no ListenOverflows"
    [ "$(lt_row_value "$cell" listen_overflows)" -eq "$(lt_row_value "$cell" listen_drops)" ]
    [ "$(lt_row_value "$cell" syn_retrans)" -gt 0 ] || fail "$cell: no SYN retransmission"
  done
}

@test "the suite's own target starts from its Spring AOT code and a start archive, and each cell says so" {
  local cell
  for cell in "$RUN_DIR"/cells/*/; do
    run cat "$cell/target-start.txt"
    assert_line target_spring_aot=on
    assert_line --regexp '^target_start_mode=(aot|cds)$'
    # Spring Boot says it started from the code generated at build time.
    run grep -c 'Starting AOT-processed' "$cell/target.log"
    assert_output 1
  done
  run lt_csv_column "$CSV" target_start_mode
  refute_output --partial jar
}

@test "a cell starts Python twice, counted by the kernel: the sampler and its finish (and the live line)" {
  local cell from to starts lives
  execwatch_whole
  for cell in $(lt_cells); do
    from="$(awk -F'\t' '$1 == "cell_start" { print $2 }' "$RUN_DIR/cells/$cell/phases.tsv")"
    to="$(awk -F'\t' '$1 == "tables" { print $2 }' "$RUN_DIR/cells/$cell/phases.tsv")"
    [ -n "$from" ] && [ -n "$to" ]
    # The live line shows what runs; it decides nothing: counted on its own.
    # The cell before's finish, which runs beside this cell's start, is that
    # cell's (its directory is in its arguments).
    starts="$(awk -F'\t' -v from="$from" -v to="$to" -v cell="/cells/$cell " '$1 >= from && $1 <= to && $2 !~ /ltsuite[.]live/ \
      && !($2 ~ /ltsuite[.]cell finish/ && index($2, cell) == 0)' "$BATS_FILE_TMPDIR/python-starts.log" | wc -l)"
    lives="$(awk -F'\t' -v from="$from" -v to="$to" '$1 >= from && $1 <= to && $2 ~ /ltsuite[.]live/' "$BATS_FILE_TMPDIR/python-starts.log" | wc -l)"
    echo "cell $cell: $starts Python starts and $lives live line(s)"
    awk -F'\t' -v from="$from" -v to="$to" '$1 >= from && $1 <= to { print substr($2, 1, 120) }' "$BATS_FILE_TMPDIR/python-starts.log"
    [ "$starts" -eq 2 ] && [ "$lives" -eq 1 ]
    # Which two: the sampler, which reads both namespaces itself (setns, no
    # probe process), and this cell's finish. The sampler starts before k6; the
    # next cell's may start before this one's tables (its finish runs beside
    # them), so it is counted up to k6's end.
    local k6_end
    k6_end="$(awk -F'\t' '$1 == "k6_end" { print $2 }' "$RUN_DIR/cells/$cell/phases.tsv")"
    [ "$(awk -F'\t' -v from="$from" -v to="$k6_end" '$1 >= from && $1 <= to && $2 ~ /sampler[.]py run/' \
      "$BATS_FILE_TMPDIR/python-starts.log" | wc -l)" -eq 1 ]
    [ "$(awk -F'\t' '$2 ~ /sampler[.]py probe/' "$BATS_FILE_TMPDIR/python-starts.log" | wc -l)" -eq 0 ]
  done
}

@test "a cell's finish runs beside the next cell's start and is joined before the next cell's load" {
  local -a cells
  mapfile -t cells < <(lt_cells)
  [ "${#cells[@]}" -eq 4 ]
  local i prev next
  for ((i = 0; i + 1 < ${#cells[@]}; i++)); do
    prev="$RUN_DIR/cells/${cells[i]}/phases.tsv" next="$RUN_DIR/cells/${cells[i + 1]}/phases.tsv"
    mark() { awk -F'\t' -v m="$2" '$1 == m { t = $2 } END { print t }' "$1"; }
    echo "${cells[i]}: stopped $(mark "$prev" stopped) tables $(mark "$prev" tables) finished $(mark "$prev" finished)"
    echo "${cells[i + 1]}: cell_start $(mark "$next" cell_start) target_start $(mark "$next" target_start) joined $(mark "$next" joined) k6_start $(mark "$next" k6_start)"
    # The next cell started (its namespaces, its target) before this one's
    # finish ended ...
    [ "$(mark "$next" target_start)" -lt "$(mark "$prev" tables)" ]
    # ... and its load only once that finish, report line and counts were done.
    [ "$(mark "$prev" finished)" -le "$(mark "$next" joined)" ]
    [ "$(mark "$prev" reported)" -le "$(mark "$next" joined)" ]
    [ "$(mark "$next" joined)" -le "$(mark "$next" k6_start)" ]
  done
  # Each cell's report line follows its own first line, before the next cell's.
  run grep -E '^(cell [0-9]+/4 |  (ok|failed) in )' "$BATS_FILE_TMPDIR/run.log"
  assert_line --index 0 --partial "cell 1/4 ${cells[0]}"
  assert_line --index 1 --regexp '^  ok in '
  assert_line --index 2 --partial "cell 2/4 ${cells[1]}"
  assert_line --index 7 --regexp '^  ok in '
}

@test "what happened is said once, at the run's end, and the report shows it" {
  run grep -c '^What happened:$' "$BATS_FILE_TMPDIR/run.log"
  assert_output 1
  [ -s "$RUN_DIR/findings.txt" ]
  # After the last cell's line.
  [ "$(grep -n '^What happened:$' "$BATS_FILE_TMPDIR/run.log" | cut -d: -f1)" -gt \
    "$(grep -n 'cell 4/4 ' "$BATS_FILE_TMPDIR/run.log" | head -n 1 | cut -d: -f1)" ]
  grep -q '<ul id="findings">' "$RUN_DIR/report.html"
  run grep -c '<li>' <(sed -n '/<ul id="findings">/,/<\/ul>/p' "$RUN_DIR/report.html")
  assert_output "$(wc -l <"$RUN_DIR/findings.txt")"
  # Written once, by the run's end: after the last cell's tables.
  local last
  last="$(cat "$RUN_DIR"/cells/*/phases.tsv | awk -F'\t' '$1 == "tables" && $2 > m { m = $2 } END { print m }')"
  [ "$(stat -c %Y "$RUN_DIR/findings.txt")" -ge "$((last / 1000))" ]
}

@test "before its first cell a run starts Python once: the refusals, which also plan the run (the space it needs, each cell's warnings and settings) and compile the modules" {
  local first starts
  execwatch_whole
  first="$(cat "$RUN_DIR"/cells/*/phases.tsv | awk -F'\t' '$1 == "cell_start" && (m == "" || $2 < m) { m = $2 } END { print m }')"
  starts="$(awk -F'\t' -v first="$first" '$1 < first' "$BATS_FILE_TMPDIR/python-starts.log" | wc -l)"
  echo "$starts Python starts before the first cell of $(lt_cells | wc -l)"
  awk -F'\t' -v first="$first" '$1 < first { print substr($2, 1, 120) }' "$BATS_FILE_TMPDIR/python-starts.log"
  run grep -c 'ltsuite.design refusals\|ltsuite.design resolve\|ltsuite.design warnings' "$BATS_FILE_TMPDIR/python-starts.log"
  assert_output 0
  run grep -c 'ltsuite.cell refusals' "$BATS_FILE_TMPDIR/python-starts.log"
  assert_output 1
  run grep -c 'ltsuite.cell plan\|ltsuite.space' "$BATS_FILE_TMPDIR/python-starts.log"
  assert_output 0
  # One more where python3 in PATH is a script (a version manager's shim): the
  # interpreter it runs is asked once (common.sh, LT_PYTHON).
  local shim=0
  [[ "$(head -c 2 "$(command -v python3)")" != '#!' ]] || shim=1
  [ "$starts" -eq $((1 + shim)) ]
  run grep -c 'sys.executable' "$BATS_FILE_TMPDIR/python-starts.log"
  assert_output "$shim"
  run grep -c 'compileall' "$BATS_FILE_TMPDIR/python-starts.log"
  assert_output 0
  # The plan reached the cells: each cell's settings resolved, and no planning directory left.
  [ "$(find "$RUN_DIR/cell-env" -name '*.env' | wc -l)" -eq "$(lt_cells | wc -l)" ]
}

@test "after its last cell a run starts Python twice: that cell's finish, and its tables with what report.html reads" {
  local last starts
  execwatch_whole
  last="$(cat "$RUN_DIR"/cells/*/phases.tsv | awk -F'\t' '$1 == "stopped" && $2 > m { m = $2 } END { print m }')"
  [ -n "$last" ]
  starts="$(awk -F'\t' -v last="$last" '$1 > last' "$BATS_FILE_TMPDIR/python-starts.log" | wc -l)"
  echo "$starts Python starts after the last cell stopped"
  awk -F'\t' -v last="$last" '$1 > last { print substr($2, 1, 120) }' "$BATS_FILE_TMPDIR/python-starts.log"
  [ "$starts" -eq 2 ]
  run awk -F'\t' -v last="$last" '$1 > last && $2 ~ /ltsuite[.]tables render .*--report-inputs/' "$BATS_FILE_TMPDIR/python-starts.log"
  [ "${#lines[@]}" -eq 1 ]
  run awk -F'\t' -v last="$last" '$1 > last && $2 ~ /ltsuite[.](columns|reportseries)|ltsuite[.]tables head/' \
    "$BATS_FILE_TMPDIR/python-starts.log"
  [ -z "$output" ]
  # The page still has its results table and every cell's series.
  grep -q '<th>cell</th>' "$RUN_DIR/report.html"
  sed -n '/<script type="application\/json" id="report-data">/,/<\/script>/p' "$RUN_DIR/report.html" | sed '1d;$d' \
    | jq -e '[.cells[].k6 != null] | all and length == 4'
}

@test "after its last cell a run starts jq at most 7 times, counted by the kernel, and the page's text is one of them" {
  local last
  execwatch_whole
  last="$(cat "$RUN_DIR"/cells/*/phases.tsv | awk -F'\t' '$1 == "stopped" && $2 > m { m = $2 } END { print m }')"
  [ -n "$last" ]
  # 7 here: the last cell's axes and report line, its rows' states (one jq for
  # the failed and the missing: a jq a row before, and no count of the last
  # cell's own), the manifest's end with its counts, the page's text and data,
  # and the terminal's "ran as designed" (15 before; 24 with the page's text
  # in 12 starts, before that). Every process
  # that became jq after the last cell stopped, once (a jq gone before its /proc
  # was read is "?": the count may be short, never long).
  run awk -F'\t' -v last="$last" '$1 > last && $3 ~ /\/jq$/ && !seen[$2]++ { print $4 }' \
    "$BATS_FILE_TMPDIR/execs.log"
  printf '%s\n' "${#lines[@]} jq starts after the last cell stopped" "${lines[@]}"
  [ "${#lines[@]}" -le 7 ]
  run grep -c 'page_body' <<<"$output"
  assert_output 1
}

@test "results/latest points at the run" {
  # The run is the one directory the runner created; latest names it, relative
  # to results/ so the tree can move.
  local -a runs
  mapfile -t runs < <(find "$LT_RESULTS_DIR" -mindepth 1 -maxdepth 1 -type d -printf '%f\n')
  [ "${#runs[@]}" -eq 1 ]
  [ "$(readlink "$LT_RESULTS_DIR/latest")" = "${runs[0]}" ]
  [ "$(jq -r .run_id "$LT_RESULTS_DIR/${runs[0]}/manifest.json")" = "${runs[0]}" ]
}

@test "nothing is left behind: namespaces, target, k6" {
  local run_id
  run_id="$(basename "$RUN_DIR")"
  run pgrep -f "ltsuite.run_id=$run_id"
  assert_failure
  run pgrep -f "k6 run .*-e LT_RUN_ID=$run_id"
  assert_failure
  # The namespaces' fixed names are whichever run's holds the host-wide lock:
  # with the lock free there must be none.
  if flock -n "${LT_LOCK_FILE:-/run/lock/ltsuite/run-matrix.lock}" true 2>/dev/null; then
    run ip netns list
    refute_output --partial ltsuite
  fi
}

@test "the manifest records what the cells depend on: defaults, the target's jar, every scenario file" {
  jq -e --arg sha "$(sha256sum "$LT_ROOT/env/defaults.env" | cut -d' ' -f1)" '.inputs["env/defaults.env"] == $sha' "$RUN_DIR/manifest.json"
  jq -e --arg sha "$(sha256sum "$LT_ROOT/server/target/loadtest-target.jar" | cut -d' ' -f1)" \
    '.inputs["server/target/loadtest-target.jar"] == $sha' "$RUN_DIR/manifest.json"
  local file started
  started="$(date -d "$(jq -r .started_at "$RUN_DIR/manifest.json")" +%s)"
  for file in "$LT_ROOT"/scenarios/*.js "$LT_ROOT"/scenarios/lib/*.js; do
    # As the file was when the run started (it may have been edited since).
    jq -e --arg f "${file#"$LT_ROOT"/}" --arg sha "$(sha256sum "$file" | cut -d' ' -f1)" '.inputs[$f] == $sha' "$RUN_DIR/manifest.json" >/dev/null \
      || [ "$(stat -c %Y "$file")" -ge "$started" ] \
      || fail "${file#"$LT_ROOT"/} not recorded with its sha256"
  done
  # Nothing else: the files of the scenarios, defaults, sysctls and the jar.
  [ "$(jq '.inputs | length' "$RUN_DIR/manifest.json")" -eq "$(($(find "$LT_ROOT/scenarios" -name '*.js' | wc -l) + 3))" ]
}

@test "RESUME refuses a knob given beside it, naming it" {
  local before
  before="$(sha256sum "$RUN_DIR/manifest.json")"
  VUS=3 RESUME="$(basename "$RUN_DIR")" run "$LT_ROOT/scripts/run-matrix.sh"
  assert_failure 2
  assert_output "run-matrix: RESUME: VUS=3 given beside RESUME; run $(basename "$RUN_DIR") keeps its own knobs (its overrides: none); unset them, or start a new run"
  [ "$(sha256sum "$RUN_DIR/manifest.json")" = "$before" ]
}

@test "RESUME refuses a run whose inputs changed, naming each change" {
  # A copy of the run, as if a scenario file, a TARGET_ENV_FILE and the
  # commit had been other ones when it ran.
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  mkdir "$LT_RESULTS_DIR"
  cp -r "$RUN_DIR" "$LT_RESULTS_DIR/"
  local id manifest commit spike
  id="$(basename "$RUN_DIR")"
  manifest="$LT_RESULTS_DIR/$id/manifest.json"
  # The inputs as they are now (files of this tree may be edited after the run).
  local path now
  for path in $(jq -r '.inputs | keys[]' "$manifest"); do
    now="$(sha256sum "$LT_ROOT/$path" | cut -d' ' -f1)"
    jq --arg p "$path" --arg sha "$now" '.inputs[$p] = $sha' "$manifest" >"$manifest.new" && mv "$manifest.new" "$manifest"
  done
  jq '.inputs["scenarios/spike.js"] = ("0" * 64) | .inputs["/srv/app/target.env"] = ("1" * 64) | .git_commit = "0123abc"' \
    "$manifest" >"$manifest.new" && mv "$manifest.new" "$manifest"
  RESUME="$id" run "$LT_ROOT/scripts/run-matrix.sh"
  assert_failure 2
  commit="$(git -C "$LT_ROOT" rev-parse HEAD)"
  [[ -z "$(git -C "$LT_ROOT" status --porcelain --untracked-files=no)" ]] || commit+="-dirty"
  spike="$(sha256sum "$LT_ROOT/scenarios/spike.js" | cut -c1-12)"
  assert_output "run-matrix: RESUME: the inputs of run $id changed: /srv/app/target.env (no longer an input); scenarios/spike.js (sha256 $spike, was 000000000000); the suite's git commit ($commit, was 0123abc); start a new run instead"
  [ "$(jq -r .status "$manifest")" = complete ]
}
