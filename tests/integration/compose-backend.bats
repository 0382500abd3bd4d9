#!/usr/bin/env bats
# BACKEND=compose, run for real: the default matrix with the target in a
# container per cell (Debian's Docker engine, images built here from Debian
# packages, no registry), checked for the same truths as the netns backend.
# setup_file starts an engine if none answers (and teardown_file stops that
# one), builds the images unless they are current, and runs the matrix once;
# every test reads the files. Without a Docker engine the engine tests skip
# and say why; the compose file checks still run.

setup_file() {
  load '../test_helper'
  lt_require_root
  export LT_RESULTS_DIR="$BATS_FILE_TMPDIR/results"
  export NO_ENGINE_FILE="$BATS_FILE_TMPDIR/no-engine"
  export ENGINE_STARTED_FILE="$BATS_FILE_TMPDIR/engine-started-here"
  export TIMES_FILE="$BATS_FILE_TMPDIR/times"
  local started=$SECONDS

  engine_answers || touch "$ENGINE_STARTED_FILE"
  if ! "$LT_ROOT/scripts/setup/install-docker.sh" start >"$BATS_FILE_TMPDIR/engine.log" 2>&1; then
    printf 'no Docker engine answers and none could be started: %s\n' \
      "$(tail -n 1 "$BATS_FILE_TMPDIR/engine.log")" >"$NO_ENGINE_FILE"
    rm -f "$ENGINE_STARTED_FILE"
    return 0
  fi
  engine_answers || rm -f "$ENGINE_STARTED_FILE"
  printf 'engine %ss\n' $((SECONDS - started)) >>"$TIMES_FILE"

  started=$SECONDS
  "$LT_ROOT/scripts/setup/build-images.sh" >"$BATS_FILE_TMPDIR/build.log" 2>&1 \
    || printf 'build-images.sh failed\n' >"$BATS_FILE_TMPDIR/build.failed"
  printf 'images %ss\n' $((SECONDS - started)) >>"$TIMES_FILE"

  started=$SECONDS
  BACKEND=compose run "$LT_ROOT/scripts/run-matrix.sh" "$LT_ROOT/env/matrices/default.matrix"
  printf '%s\n' "$output" >"$BATS_FILE_TMPDIR/run.log"
  printf '%s\n' "$status" >"$BATS_FILE_TMPDIR/run.status"
  printf 'run %ss\n' $((SECONDS - started)) >>"$TIMES_FILE"

  # A service the suite did not write, in a container built from its jar:
  # the worked example of docs/own-service.md (tests/fixtures/own-app.matrix).
  local own_status=0
  started=$SECONDS
  (cd "$LT_ROOT" && LT_RESULTS_DIR="$BATS_FILE_TMPDIR/own-results" BACKEND=compose \
    scripts/run-matrix.sh tests/fixtures/own-app.matrix) >"$BATS_FILE_TMPDIR/own-run.log" 2>&1 3>&- || own_status=$?
  printf '%s\n' "$own_status" >"$BATS_FILE_TMPDIR/own-run.status"
  printf 'own-app run %ss\n' $((SECONDS - started)) >>"$TIMES_FILE"
  # What is left, seen while holding the runner's lock: other runs on this
  # host use the same namespace names, and none can be running then.
  flock -w "$LT_LOCK_WAIT" "${LT_LOCK_FILE:-/run/lock/ltsuite/run-matrix.lock}" \
    sh -c 'ip netns list; docker ps --all --filter label=ltsuite.run_id --format "container {{.Names}}"' >"$BATS_FILE_TMPDIR/left.txt" 2>&1
  # The cost of this file in CI, next to the tests' own timings.
  printf '# compose backend set-up: %s\n' "$(paste -sd' ' "$TIMES_FILE")" >&3
}

teardown_file() {
  # Only the engine this file started; one that answered before stays up.
  if [[ -e "${ENGINE_STARTED_FILE:-/nonexistent}" ]]; then
    "$LT_ROOT/scripts/setup/install-docker.sh" stop >/dev/null 2>&1 || true
  fi
}

setup() {
  load '../test_helper'
  lt_require_root
}

teardown() {
  # A runner a failed test left: only the one this test started.
  lt_end "${RUNNER_PID:-}"
}

# engine_answers: succeed if a Docker engine answers (the scripts' own check).
engine_answers() {
  (lt_source_libs compose && docker_engine_answers)
}

# require_run: skip (saying why) without an engine; otherwise the run's files.
require_run() {
  if [[ -e "$NO_ENGINE_FILE" ]]; then
    skip "$(cat "$NO_ENGINE_FILE")"
  fi
  if [[ -e "$BATS_FILE_TMPDIR/build.failed" ]]; then
    fail "the images could not be built: $(tail -n 5 "$BATS_FILE_TMPDIR/build.log")"
  fi
  RUN_DIR="$(readlink -f "$LT_RESULTS_DIR/latest")"
  CSV="$RUN_DIR/results.csv"
}


# host_sysctls: the host's values of every whitelisted sysctl.
host_sysctls() {
  awk '!/^#/ && NF >= 3 { print $3 }' "$LT_ROOT/env/sysctls.tsv" | sort -u | xargs sysctl 2>/dev/null
}

# namespaces_between_runs: `ip netns list` while holding the runner's lock,
# when no run of anyone on this host can have namespaces up.
namespaces_between_runs() {
  flock -w "$LT_LOCK_WAIT" "${LT_LOCK_FILE:-/run/lock/ltsuite/run-matrix.lock}" ip netns list
}

# require_own_run: as require_run, for the run of the service of one's own;
# RUN_DIR is that run's.
require_own_run() {
  require_run
  RUN_DIR="$(readlink -f "$BATS_FILE_TMPDIR/own-results/latest")"
  [ "$(cat "$BATS_FILE_TMPDIR/own-run.status")" -eq 0 ] || fail "run failed: $(cat "$BATS_FILE_TMPDIR/own-run.log")"
}

# compose_clients: one line per compose client present ("docker compose",
# "docker-compose").
compose_clients() {
  docker compose version >/dev/null 2>&1 && echo "docker compose"
  command -v docker-compose >/dev/null && echo "docker-compose"
  return 0
}

@test "BACKEND=compose runs the default matrix and every row is ok" {
  require_run
  run cat "$BATS_FILE_TMPDIR/run.log"
  [ "$(cat "$BATS_FILE_TMPDIR/run.status")" -eq 0 ] || fail "run failed: $output"
  assert_output --partial "cell 4/4 04_accept_count-5_somaxconn-4096"
  assert_output --partial "target: service target of compose project ltsuite-cell"
  assert_output --partial "container ltsuite-target from ltsuite/target:local"
  run lt_csv_column "$CSV" status
  assert_output $'ok\nok\nok\nok'
}

@test "the manifest says backend compose and names the engine, the image and the Java in the container" {
  require_run
  run jq -r '[.status, .backend, .cells_total, .cells_done, .compose.image, .compose.container] | @tsv' "$RUN_DIR/manifest.json"
  assert_output $'complete\tcompose\t4\t4\tltsuite/target:local\tltsuite-target'
  jq -e '.compose.engine | length > 0' "$RUN_DIR/manifest.json"
  jq -e '.compose.project == "ltsuite-cell" and (.compose.client | test("compose"))' "$RUN_DIR/manifest.json"
  jq -e '.compose.image_id | startswith("sha256:")' "$RUN_DIR/manifest.json"
  jq -e '.versions.java | test("^openjdk version \"17")' "$RUN_DIR/manifest.json"
  jq -e '.overrides | index("BACKEND=compose")' "$RUN_DIR/manifest.json"
}

@test "each cell ran its own container with no network and the cell's server sysctls" {
  require_run
  local cell ids=""
  for cell in $(lt_cells); do
    local container="$RUN_DIR/cells/$cell/container.json"
    [ "$(jq -r '.[0].HostConfig.NetworkMode' "$container")" = none ]
    [ "$(jq -r '.[0].HostConfig.Sysctls["net.core.somaxconn"]' "$container")" = "$(lt_cell_value "$cell" SOMAXCONN)" ]
    [ "$(jq -r '.[0].Config.Labels["ltsuite.cell"]' "$container")" = "$cell" ]
    jq -e --arg v "TOMCAT_ACCEPT_COUNT=$(lt_cell_value "$cell" TOMCAT_ACCEPT_COUNT)" '.[0].Config.Env | index($v)' "$container"
    ids+="$(jq -r '.[0].Id' "$container")"$'\n'
  done
  [ "$(sort -u <<<"$ids" | grep -c .)" -eq 4 ]
}

@test "the compose client made each cell's container from the cell's own compose file" {
  require_run
  local cell client
  for cell in $(lt_cells); do
    local container="$RUN_DIR/cells/$cell/container.json" file="$RUN_DIR/cells/$cell/compose.yml"
    jq -e '.[0].Config.Labels | .["com.docker.compose.project"] == "ltsuite-cell" and .["com.docker.compose.service"] == "target"' "$container"
    [[ "$(jq -r '.[0].Config.Labels["com.docker.compose.project.config_files"]' "$container")" == *"/cells/$cell/compose.yml" ]]
    # Every compose client here reads it as the cell's settings.
    while IFS= read -r client; do
      run $client -p ltsuite-cell -f "$file" config
      assert_success
      grep -Eq "^ *net\.core\.somaxconn: ['\"]?$(lt_cell_value "$cell" SOMAXCONN)['\"]?\$" <<<"$output"
      grep -Eq "^ *TOMCAT_ACCEPT_COUNT: ['\"]?$(lt_cell_value "$cell" TOMCAT_ACCEPT_COUNT)['\"]?\$" <<<"$output"
      grep -Eq "^ *network_mode: ['\"]?none['\"]?\$" <<<"$output"
    done < <(compose_clients)
  done
}

@test "the container's kernel reports the cell's sysctls, and the client namespace its own" {
  require_run
  for cell in $(lt_cells); do
    [ "$(lt_effective_sysctl "$cell" server net.core.somaxconn)" = "$(lt_cell_value "$cell" SOMAXCONN)" ]
    [ "$(lt_effective_sysctl "$cell" client net.ipv4.tcp_syn_retries)" = 2 ]
  done
}

@test "every cell has the netns backend's files" {
  require_run
  for cell in $(lt_cells); do
    for file in cell.env summary.json k6.log target.log sysctls.tsv samples.tsv netstat-delta.tsv \
      nstat-server-before.txt nstat-server-after.txt nstat-client-before.txt nstat-client-after.txt row.json; do
      [ -s "$RUN_DIR/cells/$cell/$file" ] || fail "$cell/$file missing or empty"
    done
    grep -q "Tomcat started on port 8080" "$RUN_DIR/cells/$cell/target.log"
  done
}

@test "(a) at saturation the container holds max-connections + min(accept-count, somaxconn) + 1" {
  require_run
  for cell in $(lt_cells); do
    lt_assert_saturated_capacity "$cell"
  done
}

@test "(b) the listener's backlog is min(accept-count, somaxconn) as the container's kernel caps it" {
  require_run
  for cell in $(lt_cells); do
    local ac somaxconn
    ac="$(lt_cell_value "$cell" TOMCAT_ACCEPT_COUNT)"
    somaxconn="$(lt_effective_sysctl "$cell" server net.core.somaxconn)"
    [ "$(lt_row_value "$cell" listen_backlog)" -eq $((ac < somaxconn ? ac : somaxconn)) ] \
      || fail "$cell: listen_backlog $(lt_row_value "$cell" listen_backlog)"
  done
}

@test "(c) counter deltas are there: the container's listener overflows and clients fail" {
  require_run
  for cell in $(lt_cells); do
    local dir="$RUN_DIR/cells/$cell" before after
    grep -q $'^TcpExtListenOverflows\tserver\t' "$dir/netstat-delta.tsv" || fail "$cell: no server delta"
    grep -q $'\tclient\t' "$dir/netstat-delta.tsv" || fail "$cell: no client delta"
    awk -F'\t' 'NR > 1 && $3 <= 0 { bad = 1 } END { exit bad }' "$dir/netstat-delta.tsv" \
      || fail "$cell: a delta <= 0"
    [ "$(lt_row_value "$cell" listen_overflows)" -gt 0 ] || fail "$cell: no ListenOverflows"
    [ "$(lt_row_value "$cell" listen_overflows)" -eq "$(lt_row_value "$cell" listen_drops)" ]
    [ "$(lt_row_value "$cell" failed_reqs)" -gt 0 ] || fail "$cell: no failed request"
    before="$(awk '$1 == "TcpExtListenOverflows" { print $2 }' "$dir/nstat-server-before.txt")"
    after="$(awk '$1 == "TcpExtListenOverflows" { print $2 }' "$dir/nstat-server-after.txt")"
    [ "$(lt_row_value "$cell" listen_overflows)" -eq $((after - before)) ]
  done
}

@test "nothing is left behind: no container, no namespace, no k6" {
  require_run
  run docker ps --all --quiet --filter "label=ltsuite.run_id=$(basename "$RUN_DIR")"
  assert_output ""
  run cat "$BATS_FILE_TMPDIR/left.txt"
  refute_output --partial ltsuite
  run pgrep -f "k6 run .*-e LT_RUN_ID=$(basename "$RUN_DIR")"
  assert_failure
}

@test "SIGTERM mid-cell removes the container and the namespaces; the host's sysctls stay as they were" {
  require_run
  local log="$BATS_TEST_TMPDIR/run.log" host_before deadline status=0
  host_before="$(host_sysctls)"
  printf 'VUS=4\nDURATION=60s\nDELAY_MS=100\nSOMAXCONN=8\nTCP_ABORT_ON_OVERFLOW=1\n' >"$BATS_TEST_TMPDIR/long.matrix"
  LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results" BACKEND=compose \
    "$LT_ROOT/scripts/run-matrix.sh" "$BATS_TEST_TMPDIR/long.matrix" >"$log" 2>&1 3>&- &
  RUNNER_PID=$!
  deadline=$((SECONDS + LT_LOCK_WAIT + 120))
  until grep -q "target: service target" "$log"; do
    kill -0 "$RUNNER_PID" 2>/dev/null || fail "the run ended before its target was up: $(cat "$log")"
    ((SECONDS < deadline)) || fail "the target was not up in time: $(cat "$log")"
    sleep 0.2
  done
  sleep 3
  run docker ps --quiet --filter label=ltsuite.run_id
  [ "${#lines[@]}" -eq 1 ]
  kill -TERM "$RUNNER_PID"
  wait "$RUNNER_PID" || status=$?
  RUNNER_PID=""
  [ "$status" -ne 0 ]
  grep -q "interrupted" "$log"
  run docker ps --all --quiet --filter label=ltsuite.run_id
  assert_output ""
  run namespaces_between_runs
  refute_output --partial ltsuite
  [ "$(host_sysctls)" = "$host_before" ]
}

@test "TARGET_JAR: the cells ran in an image built from that jar, with Spring Boot's properties and no suite knob" {
  require_own_run
  local cell image jar="$LT_ROOT/tests/fixtures/ownapp/target/greeting-service.jar"
  image="$(jq -r .compose.image "$RUN_DIR/manifest.json")"
  [[ "$image" == ltsuite/app-*:local ]]
  [ "$(docker image inspect --format '{{ index .Config.Labels "ltsuite.jar_sha256" }}' "$image")" = "$(sha256sum "$jar" | cut -d' ' -f1)" ]
  for cell in $(lt_cells); do
    local container="$RUN_DIR/cells/$cell/container.json"
    [ "$(jq -r '.[0].Config.Image' "$container")" = "$image" ]
    [ "$(jq -r '.[0].HostConfig.NetworkMode' "$container")" = none ]
    jq -e --arg v "SERVER_TOMCAT_ACCEPTCOUNT=$(lt_cell_value "$cell" TOMCAT_ACCEPT_COUNT)" '.[0].Config.Env | index($v)' "$container"
    # TARGET_ENV_FILE's setting, and nothing of the suite's own target.
    jq -e '.[0].Config.Env | index("GREETING_WORKMS=1000")' "$container"
    jq -e '[.[0].Config.Env[] | select(startswith("TOMCAT_") or startswith("DELAY_MS="))] == []' "$container"
    grep -q 'Started GreetingApplication' "$RUN_DIR/cells/$cell/target.log"
    # /actuator/configprops of the application in the container agrees with the cell.
    run jq -c . "$RUN_DIR/cells/$cell/connector.json"
    assert_output '{"checked":true,"reason":null,"mismatches":[],"source":"/actuator/configprops"}'
  done
}

@test "TARGET_JAR in a container: the accept-queue formula holds, and Tomcat's threads come from its actuator" {
  require_own_run
  local cell
  run lt_csv_column "$RUN_DIR/results.csv" status
  assert_output $'ok\nok'
  for cell in $(lt_cells); do
    lt_assert_saturated_capacity "$cell"
    lt_assert_prediction_kept "$cell"
    [ "$(lt_row_value "$cell" listen_overflows)" -gt 0 ]
    [ "$(lt_row_value "$cell" tomcat_threads_busy_peak)" -eq 2 ]
    [ "$(lt_row_value "$cell" vus_started)" -eq 16 ]
  done
}

@test "BACKEND=compose refuses an external TARGET_URL: it starts its own target" {
  printf 'VUS=2\nDURATION=2s\n' >"$BATS_TEST_TMPDIR/one.matrix"
  BACKEND=compose TARGET_URL=http://127.0.0.1:1 run "$LT_ROOT/scripts/run-matrix.sh" "$BATS_TEST_TMPDIR/one.matrix"
  assert_failure 2
  assert_output --partial "BACKEND=compose starts its own target"
}

@test "compose/target.yml is valid for every compose client here and carries a cell's settings" {
  local -a clients
  mapfile -t clients < <(compose_clients)
  [[ ${#clients[@]} -gt 0 ]] || skip "no compose client (scripts/setup/install-docker.sh installs docker-compose)"
  local client
  for client in "${clients[@]}"; do
    # Unquoted: "docker compose" is two words.
    SOMAXCONN=2 TOMCAT_ACCEPT_COUNT=5 TCP_SYNCOOKIES='' run $client -f "$LT_ROOT/compose/target.yml" config
    assert_success
    assert_output --regexp "net.core.somaxconn: ['\"]?2['\"]?"
    assert_output --regexp "net.ipv4.tcp_syncookies: ['\"]?1['\"]?"
    assert_output --regexp "SERVER_TOMCAT_ACCEPTCOUNT: ['\"]?5['\"]?"
    # Run by hand, the target is reached on a port published to loopback.
    refute_output --partial network_mode
    assert_output --partial "127.0.0.1:8080:8080"
  done
}

@test "compose/target.yml defaults are the suite's defaults and its sysctls are server-side ones" {
  lt_source_libs envfile matrix
  knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  local line key default name found=0
  while read -r line; do
    [[ "$line" =~ \$\{([A-Z_]+):-([^}]*)\} ]] || continue
    key="${BASH_REMATCH[1]}"
    default="${BASH_REMATCH[2]}"
    [[ -n "${KNOB_DEFAULT[$key]+set}" ]] || continue
    found=$((found + 1))
    if [[ -n "${SYSCTL_SIDE[$key]:-}" ]]; then
      [ "${SYSCTL_SIDE[$key]}" = server ] || fail "$key is not a server-side sysctl"
      name="${line%%:*}"
      name="${name//[[:space:]]/}"
      [ "$name" = "${SYSCTL_NAME[$key]}" ] || fail "$key is ${SYSCTL_NAME[$key]}, not $name"
    else
      [ "$default" = "${KNOB_DEFAULT[$key]}" ] || fail "$key defaults to $default, defaults.env says ${KNOB_DEFAULT[$key]}"
    fi
  done <"$LT_ROOT/compose/target.yml"
  [ "$found" -ge 20 ]
}
