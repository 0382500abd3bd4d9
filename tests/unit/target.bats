#!/usr/bin/env bats
# target.sh and connector.jq: how a cell's knobs reach a target the suite did
# not write, what is refused before anything starts, and the connector check.
# shellcheck disable=SC2016,SC2034,SC2030,SC2031 # SC2016: jq programs and literal backquotes in single quotes on purpose; SC2034: assigned through a nameref, or read by the sourced library under test; SC2030,SC2031: each test is its own subshell, CELL_ERROR is set and read within one

setup() {
  load '../test_helper'
  lt_source_libs envfile matrix netns results target
  LT_PROG='test'
}

@test "Spring Boot's relaxed environment names of the connector's properties" {
  run target_env_name server.tomcat.accept-count
  assert_output SERVER_TOMCAT_ACCEPTCOUNT
  run target_env_name server.tomcat.threads.min-spare
  assert_output SERVER_TOMCAT_THREADS_MINSPARE
}

@test "a cell's knobs become Spring Boot properties, the actuator its own loopback port" {
  local -A cell=([SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081 [TOMCAT_MAX_THREADS]=3 [TOMCAT_MIN_SPARE_THREADS]=1
    [TOMCAT_MAX_CONNECTIONS]=2 [TOMCAT_ACCEPT_COUNT]=5 [TOMCAT_CONNECTION_TIMEOUT]=20000
    [TOMCAT_KEEP_ALIVE_TIMEOUT]=1000 [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=1)
  run target_spring_env cell 198.18.0.1
  assert_line SERVER_ADDRESS=198.18.0.1
  assert_line SERVER_PORT=8080
  assert_line MANAGEMENT_SERVER_ADDRESS=127.0.0.1
  assert_line MANAGEMENT_SERVER_PORT=8081
  assert_line SERVER_TOMCAT_THREADS_MAX=3
  assert_line SERVER_TOMCAT_THREADS_MINSPARE=1
  assert_line SERVER_TOMCAT_MAXCONNECTIONS=2
  assert_line SERVER_TOMCAT_MBEANREGISTRY_ENABLED=true
  assert_line MANAGEMENT_ENDPOINT_CONFIGPROPS_SHOWVALUES=always
  assert_line SERVER_TOMCAT_ACCEPTCOUNT=5
  assert_line SERVER_TOMCAT_CONNECTIONTIMEOUT=20000
  assert_line SERVER_TOMCAT_KEEPALIVETIMEOUT=1000
  assert_line SERVER_TOMCAT_MAXKEEPALIVEREQUESTS=1
  assert_line MANAGEMENT_ENDPOINT_HEALTH_PROBES_ADDADDITIONALPATHS=true
}

@test "the endpoints the suite reads are exposed on its own connector, unless TARGET_ACTUATOR=as-is" {
  local -A cell=([SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081 [TOMCAT_MAX_THREADS]=3 [TOMCAT_MIN_SPARE_THREADS]=1
    [TOMCAT_MAX_CONNECTIONS]=2 [TOMCAT_ACCEPT_COUNT]=5 [TOMCAT_CONNECTION_TIMEOUT]=20000
    [TOMCAT_KEEP_ALIVE_TIMEOUT]=1000 [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=1 [TARGET_ACTUATOR]=needed)
  run target_spring_env cell 198.18.0.1
  assert_line MANAGEMENT_ENDPOINTS_WEB_EXPOSURE_INCLUDE=health,metrics,configprops
  assert_line MANAGEMENT_ENDPOINTS_WEB_EXPOSURE_EXCLUDE=
  cell[TARGET_ACTUATOR]=as-is
  run target_spring_env cell 198.18.0.1
  refute_line --partial MANAGEMENT_ENDPOINTS_WEB_EXPOSURE
  assert_line MANAGEMENT_SERVER_ADDRESS=127.0.0.1
}

@test "an exposure of the application's own beside TARGET_ACTUATOR=needed is refused where it was set" {
  local env_file="$BATS_TEST_TMPDIR/app.env"
  printf 'GREETING_WORKMS=1\nMANAGEMENT_ENDPOINTS_WEB_EXPOSURE_INCLUDE=health\n' >"$env_file"
  local -A origin=([TARGET_ARGS]="m.matrix:2" [TARGET_JAVA_OPTS]="m.matrix:3" [TARGET_ENV_FILE]="m.matrix:4"
    [TARGET_HEALTH_PATH]=defaults [TARGET_ACTUATOR]=defaults [MANAGEMENT_PORT]=defaults [SERVER_PORT]=defaults
    [TOMCAT_SO_LINGER]=defaults)
  local -A value=([TARGET_CMD]='' [TARGET_URL]='' [BACKEND]=netns [TARGET_HEALTH_PATH]=/readyz [TARGET_JAR]=app.jar
    [TARGET_ARGS]='--spring.profiles.active=x --management.endpoints.web.exposure.include=health'
    [TARGET_JAVA_OPTS]='-Xss1m -Dmanagement.endpoints.web.exposure.exclude=metrics' [TARGET_ENV_FILE]="$env_file"
    [TARGET_ACTUATOR]=needed [SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081)
  run target_knob_problems origin value
  assert_line "m.matrix:2: TARGET_ARGS: '--management.endpoints.web.exposure.include=health': TARGET_ACTUATOR=needed exposes health,metrics,configprops on the suite's own loopback connector; remove it, or set TARGET_ACTUATOR=as-is to keep the application's own exposure"
  assert_line --partial "m.matrix:3: TARGET_JAVA_OPTS: '-Dmanagement.endpoints.web.exposure.exclude=metrics': TARGET_ACTUATOR=needed"
  assert_line --partial "$env_file:2: MANAGEMENT_ENDPOINTS_WEB_EXPOSURE_INCLUDE: TARGET_ACTUATOR=needed"
  assert_equal "${#lines[@]}" 3
  value[TARGET_ACTUATOR]=as-is
  run target_knob_problems origin value
  assert_output ""
}

@test "an actuator that answers but will not show its settings is named for what guards it, never as a setting to add" {
  local stub_code
  # shellcheck disable=SC2317 # SC2317: called by target_configprops, in place of the namespace
  netns_exec() { printf '{"status":%s}\n%s' "$stub_code" "$stub_code"; }
  TARGET_CHECK_WAIT_S=0
  local -A cell=([MANAGEMENT_PORT]=8081 [TOMCAT_MAX_THREADS]=20 [TOMCAT_MIN_SPARE_THREADS]=10
    [TOMCAT_MAX_CONNECTIONS]=7 [TOMCAT_ACCEPT_COUNT]=10 [TOMCAT_CONNECTION_TIMEOUT]=60000
    [TOMCAT_KEEP_ALIVE_TIMEOUT]=60000 [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=100 [TARGET_ACTUATOR]=needed)
  stub_code=401
  run target_check_connector cell
  assert_output --partial '"status":"401"'
  assert_output --partial 'the actuator is guarded by Spring Security'
  refute_output --partial 'exposure.include'
  stub_code=500
  run target_check_connector cell
  assert_output --partial 'the application maps the actuator'"'"'s answer to an error'
  refute_output --partial 'exposure.include'
  # Exposed by the suite and still 404: turned off in the application.
  stub_code=404
  run target_check_connector cell
  assert_output --partial 'although the suite exposed it there (TARGET_ACTUATOR=needed)'
  cell[TARGET_ACTUATOR]=as-is
  run target_check_connector cell
  assert_output --partial 'add configprops to management.endpoints.web.exposure.include, or leave TARGET_ACTUATOR at needed'
}

@test "a jar of one's own starts with its options, -jar and its arguments, words never joined" {
  : >"$BATS_TEST_TMPDIR/app.jar"
  local -A cell=([TARGET_JAR]="$BATS_TEST_TMPDIR/app.jar" [TARGET_JAVA_OPTS]='-XX:+UseSerialGC -Dx=$(id)'
    [TARGET_ARGS]='--spring.profiles.active=load' [TARGET_START_MODE]=cds)
  run target_java_args cell
  assert_output "$(printf '%s\n' -XX:+UseSerialGC '-Dx=$(id)' -jar "$BATS_TEST_TMPDIR/app.jar" --spring.profiles.active=load)"
}

@test "no options and no arguments add no empty word" {
  : >"$BATS_TEST_TMPDIR/app.jar"
  local -A cell=([TARGET_JAR]="$BATS_TEST_TMPDIR/app.jar" [TARGET_JAVA_OPTS]='' [TARGET_ARGS]='')
  run target_java_args cell
  assert_output "$(printf '%s\n' -jar "$BATS_TEST_TMPDIR/app.jar")"
}

@test "TARGET_CMD's placeholders are replaced, word by word" {
  local -A cell=([TARGET_CMD]='python3 -m http.server --bind {SERVER_ADDR} {SERVER_PORT}'
    [SERVER_ADDR]=198.18.0.1 [SERVER_PORT]=8080)
  run target_cmd_words cell
  assert_output "$(printf '%s\n' python3 -m http.server --bind 198.18.0.1 8080)"
  run target_kind cell
  assert_output cmd
}

@test "the knob problems name where each knob was set" {
  local -A origin=([TARGET_CMD]="m.matrix:1" [TOMCAT_MAX_THREADS]="m.matrix:2" [TOMCAT_MIN_SPARE_THREADS]=defaults
    [TOMCAT_MAX_CONNECTIONS]=defaults [TOMCAT_ACCEPT_COUNT]=defaults [TOMCAT_CONNECTION_TIMEOUT]=defaults
    [TOMCAT_KEEP_ALIVE_TIMEOUT]=defaults [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=defaults [TARGET_JAR]=defaults
    [TARGET_JAVA_OPTS]=defaults [TARGET_ARGS]="command line" [TARGET_HEALTH_PATH]=defaults
    [TOMCAT_SO_LINGER]="m.matrix:3" [TARGET_IMAGE]=defaults)
  local -A value=([TARGET_CMD]='nginx' [TARGET_URL]='' [BACKEND]=netns [TARGET_HEALTH_PATH]=/
    [TARGET_ARGS]='--management.server.port=1' [TARGET_ENV_FILE]='' [TARGET_JAR]='')
  run target_knob_problems origin value
  assert_line --partial "m.matrix:2: TOMCAT_MAX_THREADS: a setting of a Spring Boot target, but TARGET_CMD"
  assert_line --partial "m.matrix:3: TOMCAT_SO_LINGER: a setting of a Spring Boot target, but TARGET_CMD"
  assert_line --partial "command line: TARGET_ARGS: a setting of a Spring Boot target"
  assert_line --partial "command line: TARGET_ARGS: '--management.server.port=1' is set by the suite"
  refute_line --partial TOMCAT_ACCEPT_COUNT
  # In a container: a command is refused, and so is TARGET_IMAGE beside the jar it is built from.
  value[BACKEND]=compose
  run target_knob_problems origin value
  assert_line --partial "m.matrix:1: TARGET_CMD: BACKEND=compose runs a Spring Boot jar in a container"
  value[TARGET_CMD]='' value[TARGET_ARGS]='' value[TARGET_JAR]=/srv/app.jar
  origin[TARGET_IMAGE]="m.matrix:4"
  run target_knob_problems origin value
  assert_line "m.matrix:4: TARGET_IMAGE: BACKEND=compose builds the image of TARGET_JAR itself; set one of TARGET_JAR and TARGET_IMAGE"
  # SO_LINGER is no Spring Boot property: only the suite's own target takes it.
  assert_line "m.matrix:3: TOMCAT_SO_LINGER: only the suite's own target sets SO_LINGER (Spring Boot has no property for it); remove it or TARGET_JAR"
  origin[TARGET_IMAGE]=defaults origin[TOMCAT_SO_LINGER]=defaults
  run target_knob_problems origin value
  assert_output ""
}

@test "the connector check: durations compared in ms, a difference named" {
  cat >"$BATS_TEST_TMPDIR/configprops.json" <<'JSON'
{"contexts": {"app": {"beans": {"server-org.springframework.boot.autoconfigure.web.ServerProperties": {
  "prefix": "server", "properties": {"port": 8080, "tomcat": {"threads": {"max": 200, "minSpare": 10},
  "maxConnections": 2, "acceptCount": 50, "connectionTimeout": "PT1M", "keepAliveTimeout": "PT0.5S",
  "maxKeepAliveRequests": 100}}}}}}}
JSON
  run jq -c --argjson expected '{"server.tomcat.threads.max":200,"server.tomcat.threads.min-spare":10,
    "server.tomcat.max-connections":2,"server.tomcat.accept-count":100,"server.tomcat.connection-timeout":60000,
    "server.tomcat.keep-alive-timeout":500,"server.tomcat.max-keep-alive-requests":100}' \
    -f "$LT_ROOT/scripts/lib/connector.jq" "$BATS_TEST_TMPDIR/configprops.json"
  assert_output '{"checked":true,"reason":null,"mismatches":[{"property":"server.tomcat.accept-count","cell":100,"effective":50}]}'
}

@test "the connector check on Spring Boot 4: Tomcat's properties in their own server.tomcat bean" {
  # Recorded from a Spring Boot 4.0.7 service (Tomcat 11) started with
  # max-connections 7, threads.max 20, accept-count 10: its "server" bean has
  # no tomcat part any more.
  run jq -c --argjson expected '{"server.tomcat.threads.max":20,"server.tomcat.threads.min-spare":10,
    "server.tomcat.max-connections":7,"server.tomcat.accept-count":11,"server.tomcat.max-keep-alive-requests":100}' \
    -f "$LT_ROOT/scripts/lib/connector.jq" "$LT_ROOT/tests/fixtures/configprops-boot4.json"
  assert_output '{"checked":true,"reason":null,"mismatches":[{"property":"server.tomcat.accept-count","cell":11,"effective":10}]}'
}

@test "the connector check on Spring Boot 2.7: Tomcat's properties in ServerProperties, values shown unasked" {
  # Recorded from /actuator/configprops/server of a Spring Boot 2.7.18 service
  # (Tomcat 9) started with threads.max 7 and no show-values (2.7 has none);
  # the access log's own "prefix" inside it is not a bean's.
  run jq -c --argjson expected '{"server.tomcat.threads.max":7,"server.tomcat.threads.min-spare":10,
    "server.tomcat.max-connections":8192,"server.tomcat.accept-count":11,"server.tomcat.max-keep-alive-requests":100}' \
    -f "$LT_ROOT/scripts/lib/connector.jq" "$LT_ROOT/tests/fixtures/configprops-boot2.json"
  assert_output '{"checked":true,"reason":null,"mismatches":[{"property":"server.tomcat.accept-count","cell":11,"effective":100}]}'
}

@test "the connector check waits for the actuator's port, which listens after the port under test" {
  # Spring Boot starts the actuator's connector after the main one: here it
  # listens one second after the check begins, and serves a recorded answer.
  # shellcheck disable=SC2317 # SC2317: called by target_configprops, in place of the namespace
  netns_exec() { shift; "$@"; }
  local port=$((20000 + RANDOM % 10000)) root="$BATS_TEST_TMPDIR/www"
  mkdir -p "$root/actuator/configprops"
  cp "$LT_ROOT/tests/fixtures/configprops-boot4.json" "$root/actuator/configprops/server"
  (sleep 1 && exec python3 -m http.server --bind 127.0.0.1 --directory "$root" "$port") >/dev/null 2>&1 3>&- &
  local server=$!
  local -A cell=([MANAGEMENT_PORT]=$port [TOMCAT_MAX_THREADS]=20 [TOMCAT_MIN_SPARE_THREADS]=10
    [TOMCAT_MAX_CONNECTIONS]=7 [TOMCAT_ACCEPT_COUNT]=10 [TOMCAT_CONNECTION_TIMEOUT]=60000
    [TOMCAT_KEEP_ALIVE_TIMEOUT]=60000 [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=100)
  run target_check_connector cell
  kill "$server"
  assert_output --partial '"checked":true'
}

@test "the connector check and the thread pool's kind take one jq start, their mismatches together" {
  # shellcheck disable=SC2317 # SC2317: called by target_configprops, in place of the namespace
  netns_exec() { shift; "$@"; }
  local starts="$BATS_TEST_TMPDIR/jq-starts"
  # shellcheck disable=SC2317 # SC2317: called by the check, in place of jq
  jq() { printf 'jq\n' >>"$starts"; command jq "$@"; }
  local port root="$BATS_TEST_TMPDIR/www"
  port="$(lt_free_port)"
  mkdir -p "$root/actuator/configprops" "$root/actuator/metrics"
  cp "$LT_ROOT/tests/fixtures/configprops-boot4.json" "$root/actuator/configprops/server"
  # A Spring Boot 3.5 target's answer, a pool of 200 threads.
  printf '{"name":"tomcat.threads.config.max","baseUnit":"threads","measurements":[{"statistic":"VALUE","value":200.0}],"availableTags":[]}' \
    >"$root/actuator/metrics/tomcat.threads.config.max"
  python3 -m http.server --bind 127.0.0.1 --directory "$root" "$port" >/dev/null 2>&1 3>&- &
  HTTP_PID=$!
  local i
  for ((i = 0; i < 50; i++)); do curl -fs -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  local -A cell=([MANAGEMENT_PORT]=$port [TOMCAT_MAX_THREADS]=20 [TOMCAT_MIN_SPARE_THREADS]=10
    [TOMCAT_MAX_CONNECTIONS]=7 [TOMCAT_ACCEPT_COUNT]=11 [TOMCAT_CONNECTION_TIMEOUT]=60000
    [TOMCAT_KEEP_ALIVE_TIMEOUT]=60000 [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=100 [TOMCAT_VIRTUAL_THREADS]=0)
  : >"$starts"
  run target_check_connector cell
  assert_success
  command jq -e '.checked == true and (.mismatches | map(.property) | index("server.tomcat.accept-count") != null)
    and (.mismatches | map(.property) | index("spring.threads.virtual.enabled") == null)' <<<"$output"
  assert_equal "$(wc -l <"$starts")" 1
  # Virtual threads asked for, a pool found: in the same list.
  cell[TOMCAT_VIRTUAL_THREADS]=1
  run target_check_connector cell
  command jq -e '.checked == true and (.mismatches | map(.property) | index("server.tomcat.accept-count") != null)
    and (.mismatches[] | select(.property == "spring.threads.virtual.enabled") | .effective == "false (a pool of 200 threads)")' <<<"$output"
}

@test "a connector check that could not be made says so, and does not blame the application's settings" {
  # shellcheck disable=SC2317 # SC2317: called by target_configprops, in place of the namespace
  netns_exec() { shift; "$@"; }
  TARGET_CHECK_WAIT_S=0
  local -A cell=([MANAGEMENT_PORT]=1 [TOMCAT_MAX_THREADS]=20 [TOMCAT_MIN_SPARE_THREADS]=10
    [TOMCAT_MAX_CONNECTIONS]=7 [TOMCAT_ACCEPT_COUNT]=10 [TOMCAT_CONNECTION_TIMEOUT]=60000
    [TOMCAT_KEEP_ALIVE_TIMEOUT]=60000 [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=100)
  run target_check_connector cell
  assert_output '{"checked":false,"mismatches":[],"source":"/actuator/configprops","status":"000","reason":"the check could not be made: nothing answered /actuator/configprops on 127.0.0.1:1 within 0 s, or after the application logged that it had started (an application without the actuator has nothing there)"}'
}

@test "an application that logged its start and has nothing on the actuator's port is not waited for" {
  # shellcheck disable=SC2317 # SC2317: called by target_configprops, in place of the namespace
  netns_exec() { shift; "$@"; }
  TARGET_LOG="$BATS_TEST_TMPDIR/target.log"
  printf 'INFO --- [main] example.App : Started App in 2.5 seconds (process running for 3.1)\n' >"$TARGET_LOG"
  local -A cell=([MANAGEMENT_PORT]=1 [TOMCAT_MAX_THREADS]=20 [TOMCAT_MIN_SPARE_THREADS]=10
    [TOMCAT_MAX_CONNECTIONS]=7 [TOMCAT_ACCEPT_COUNT]=10 [TOMCAT_CONNECTION_TIMEOUT]=60000
    [TOMCAT_KEEP_ALIVE_TIMEOUT]=60000 [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=100)
  local began=$SECONDS
  run target_check_connector cell
  assert_output --partial '"checked":false'
  ((SECONDS - began <= 2))
}

# lt_own_cell NAME: a cell of the suite's own target that ran as the recorded
# tests/fixtures/target-own.log says (its port under test 198.18.0.1:8080, the
# actuator's 127.0.0.1:8081 with settings of its own).
lt_own_cell() {
  local -n own_cell="$1"
  own_cell=([TARGET_JAR]='' [TARGET_CMD]='' [SERVER_ADDR]=198.18.0.1 [SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081
    [TOMCAT_MAX_THREADS]=200 [TOMCAT_MIN_SPARE_THREADS]=10 [TOMCAT_MAX_CONNECTIONS]=15000 [TOMCAT_ACCEPT_COUNT]=25000
    [TOMCAT_CONNECTION_TIMEOUT]=60000 [TOMCAT_KEEP_ALIVE_TIMEOUT]=60000 [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=100
    [TOMCAT_VIRTUAL_THREADS]=0)
}

@test "every Tomcat knob has its name in the line the suite's own target logs, and that line logs it" {
  local pair name java="$LT_ROOT/server/src/main/java/loadtest/target/ConnectorSettingsLogger.java"
  for pair in "${TARGET_TOMCAT_PROPERTIES[@]}"; do
    name="${TARGET_TOMCAT_LOGGED[${pair%%=*}]:-}"
    [ -n "$name" ] || fail "${pair%%=*} has no logged name in TARGET_TOMCAT_LOGGED"
    grep -q " $name={}" "$java" || grep -q "\"$name={}" "$java" || fail "ConnectorSettingsLogger does not log $name"
  done
  [ "${#TARGET_TOMCAT_LOGGED[@]}" -eq "${#TARGET_TOMCAT_PROPERTIES[@]}" ]
}

@test "the suite's own target's connector is read from its log, the port under test's line, with no process started" {
  # shellcheck disable=SC2317 # SC2317: called in place of the namespace, curl and jq
  netns_exec() { printf 'netns_exec\n' >>"$BATS_TEST_TMPDIR/processes"; return 7; }
  # shellcheck disable=SC2317 # SC2317: called in place of jq
  jq() { printf 'jq\n' >>"$BATS_TEST_TMPDIR/processes"; command jq "$@"; }
  local -A cell
  lt_own_cell cell
  run target_check_connector cell "$LT_ROOT/tests/fixtures/target-own.log"
  assert_success
  assert_output '{"checked":true,"reason":null,"source":"target.log","mismatches":[]}'
  [[ ! -e "$BATS_TEST_TMPDIR/processes" ]] || fail "started: $(<"$BATS_TEST_TMPDIR/processes")"
  # The actuator's connector (maxThreads=8 maxConnections=64 acceptCount=64) is not the one under test.
  cell[SERVER_ADDR]=127.0.0.1
  cell[SERVER_PORT]=8081
  run _target_check_connector_log cell "$LT_ROOT/tests/fixtures/target-own.log"
  command jq -e '.mismatches | map(.property) | index("server.tomcat.max-connections") != null' <<<"$output"
}

@test "a setting the suite's own target logged differently from the cell's knob is a mismatch, named with its source" {
  local -A cell
  lt_own_cell cell
  cell[TOMCAT_ACCEPT_COUNT]=100
  cell[TOMCAT_KEEP_ALIVE_TIMEOUT]=20000
  run target_check_connector cell "$LT_ROOT/tests/fixtures/target-own.log"
  assert_output '{"checked":true,"reason":null,"source":"target.log","mismatches":[{"property":"server.tomcat.accept-count","cell":100,"effective":25000,"source":"target.log"},{"property":"server.tomcat.keep-alive-timeout","cell":20000,"effective":60000,"source":"target.log"}]}'
  # Virtual threads asked for and a pool of 200 logged.
  lt_own_cell cell
  cell[TOMCAT_VIRTUAL_THREADS]=1
  run target_check_connector cell "$LT_ROOT/tests/fixtures/target-own.log"
  assert_output '{"checked":true,"reason":null,"source":"target.log","mismatches":[{"property":"spring.threads.virtual.enabled","cell":"true","effective":"false (a pool of 200 threads)","source":"target.log"}]}'
}

@test "virtual threads: the logged maxThreads -1 (no pool of Tomcat's own) is as asked, and no thread count is compared" {
  sed 's/maxThreads=200 minSpareThreads=10/maxThreads=-1 minSpareThreads=-1/' "$LT_ROOT/tests/fixtures/target-own.log" >"$BATS_TEST_TMPDIR/target.log"
  local -A cell
  lt_own_cell cell
  cell[TOMCAT_VIRTUAL_THREADS]=1
  run target_check_connector cell "$BATS_TEST_TMPDIR/target.log"
  assert_output '{"checked":true,"reason":null,"source":"target.log","mismatches":[]}'
  cell[TOMCAT_VIRTUAL_THREADS]=0
  run target_check_connector cell "$BATS_TEST_TMPDIR/target.log"
  assert_output '{"checked":true,"reason":null,"source":"target.log","mismatches":[{"property":"spring.threads.virtual.enabled","cell":"false","effective":"true","source":"target.log"}]}'
}

@test "a pool's min-spare above its max runs at the max (Tomcat takes the smaller), not a mismatch" {
  sed 's/maxThreads=200 minSpareThreads=10/maxThreads=4 minSpareThreads=4/' "$LT_ROOT/tests/fixtures/target-own.log" >"$BATS_TEST_TMPDIR/target.log"
  local -A cell
  lt_own_cell cell
  cell[TOMCAT_MAX_THREADS]=4
  run target_check_connector cell "$BATS_TEST_TMPDIR/target.log"
  assert_output '{"checked":true,"reason":null,"source":"target.log","mismatches":[]}'
}

@test "a log without the connector's line (its logging turned off) falls back to the actuator, blaming no setting" {
  # shellcheck disable=SC2317 # SC2317: called by target_configprops, in place of the namespace
  netns_exec() { shift; "$@"; }
  TARGET_CHECK_WAIT_S=0
  grep -v ConnectorSettingsLogger "$LT_ROOT/tests/fixtures/target-own.log" >"$BATS_TEST_TMPDIR/target.log"
  local -A cell
  lt_own_cell cell
  cell[MANAGEMENT_PORT]=1
  local began=$SECONDS
  run target_check_connector cell "$BATS_TEST_TMPDIR/target.log"
  assert_output '{"checked":false,"mismatches":[],"source":"/actuator/configprops","status":"000","reason":"the check could not be made: nothing answered /actuator/configprops on 127.0.0.1:1 within 0 s, or after the application logged that it had started (an application without the actuator has nothing there)"}'
  # "Started ... in" came after every connector's line: no wait for it.
  ((SECONDS - began <= 1))
  # The suite's classes logging at WARN (TARGET_ARGS): no "Started" either, but
  # Tomcat's line for the actuator's port comes after where the line would be.
  grep -v -e ConnectorSettingsLogger -e LoadtestTargetApplication "$LT_ROOT/tests/fixtures/target-own.log" >"$BATS_TEST_TMPDIR/target.log"
  began=${EPOCHREALTIME/./}
  run target_check_connector cell "$BATS_TEST_TMPDIR/target.log"
  assert_output --partial '"source":"/actuator/configprops"'
  ((${EPOCHREALTIME/./} - began < 1000000)) || fail "waited $((${EPOCHREALTIME/./} - began)) us for a line that was not coming"
  # A jar of one's own is always asked on its actuator, whatever its log says.
  cell[TARGET_JAR]=app.jar
  run target_check_connector cell "$LT_ROOT/tests/fixtures/target-own.log"
  assert_output --partial '"source":"/actuator/configprops"'
}

@test "configprops whose values are masked cannot be checked, and no setting is called different" {
  jq '(.. | objects | select(.prefix? == "server.tomcat") | .properties) |= with_entries(.value = "******")' \
    "$LT_ROOT/tests/fixtures/configprops-boot4.json" >"$BATS_TEST_TMPDIR/masked.json"
  run jq -c --argjson expected '{"server.tomcat.accept-count":10}' -f "$LT_ROOT/scripts/lib/connector.jq" "$BATS_TEST_TMPDIR/masked.json"
  assert_output '{"checked":false,"reason":"/actuator/configprops masks its values (management.endpoint.configprops.show-values)","mismatches":[]}'
}

@test "configprops without values cannot be checked, and says how to fix it" {
  run jq -c --argjson expected '{}' -f "$LT_ROOT/scripts/lib/connector.jq" <<<'{"contexts": {"app": {"beans": {}}}}'
  assert_output --partial '"checked":false'
  assert_output --partial 'show-values=always'
}

@test "a jar of one's own left at the default health path is waited for at /readyz; a path set is kept" {
  local -A origin=([TARGET_HEALTH_PATH]=defaults) value=([TARGET_HEALTH_PATH]=/health [TARGET_JAR]=app.jar [TARGET_CMD]='' [TARGET_URL]='')
  run target_health_default origin value
  assert_output /readyz
  origin[TARGET_HEALTH_PATH]='bad.matrix:3'
  run target_health_default origin value
  assert_output ''
  # The suite's own target, a server command and an external target keep /health.
  origin[TARGET_HEALTH_PATH]=defaults
  value[TARGET_JAR]=''
  run target_health_default origin value
  assert_output ''
  value[TARGET_JAR]=app.jar
  value[TARGET_CMD]='python3 -m http.server'
  run target_health_default origin value
  assert_output ''
}

@test "left at its default, a jar of one's own warms up until settled (60s at most); TARGET_CMD and TARGET_URL get none; the suite's own target keeps 5s" {
  local -A origin=([WARMUP]=defaults [WARMUP_UNTIL]=defaults) value=([WARMUP]=5s [TARGET_JAR]=app.jar [TARGET_CMD]='' [TARGET_URL]='')
  run target_warmup_default origin value
  assert_output '60s settled'
  # WARMUP_UNTIL set, it is kept (-).
  origin[WARMUP_UNTIL]='m.matrix:3'
  run target_warmup_default origin value
  assert_output '60s -'
  # WARMUP set anywhere (a matrix, the command line), both are kept, 0s included.
  origin[WARMUP]='m.matrix:2'
  run target_warmup_default origin value
  assert_output ''
  origin=([WARMUP]=defaults [WARMUP_UNTIL]=defaults)
  value[TARGET_JAR]=''
  run target_warmup_default origin value
  assert_output ''
  value[TARGET_JAR]=app.jar
  value[TARGET_CMD]='python3 -m http.server'
  run target_warmup_default origin value
  assert_output '0s -'
  value[TARGET_CMD]=''
  value[TARGET_URL]=http://127.0.0.1:8080
  run target_warmup_default origin value
  assert_output '0s -'
}

@test "a matrix of a jar of one's own gets the default before its cells are made; one that sets WARMUP keeps it" {
  lt_untraced knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  matrix_init
  printf 'TARGET_JAR=%s\n' "$LT_ROOT/tests/fixtures/ownapp/pom.xml" | lt_write "$BATS_TEST_TMPDIR/jar.matrix"
  matrix_load "$BATS_TEST_TMPDIR/jar.matrix"
  target_apply_defaults MATRIX_ORIGIN MATRIX_VALUE
  [ "${MATRIX_VALUE[WARMUP]}" = 60s ]
  [ "${MATRIX_VALUE[WARMUP_UNTIL]}" = settled ]
  [ "${MATRIX_VALUE[TARGET_HEALTH_PATH]}" = /readyz ]
  matrix_init
  printf 'TARGET_JAR=%s\nWARMUP=0s 2s\n' "$LT_ROOT/tests/fixtures/ownapp/pom.xml" | lt_write "$BATS_TEST_TMPDIR/set.matrix"
  matrix_load "$BATS_TEST_TMPDIR/set.matrix"
  target_apply_defaults MATRIX_ORIGIN MATRIX_VALUE
  [ "${MATRIX_VALUE[WARMUP]}" = "0s 2s" ]
  [ "${MATRIX_VALUE[WARMUP_UNTIL]}" = time ]
  # The suite's own target keeps the defaults: 2s, ended by time.
  matrix_init
  printf 'VUS=2\n' | lt_write "$BATS_TEST_TMPDIR/own.matrix"
  matrix_load "$BATS_TEST_TMPDIR/own.matrix"
  target_apply_defaults MATRIX_ORIGIN MATRIX_VALUE
  [ "${MATRIX_VALUE[WARMUP]}" = 2s ]
  [ "${MATRIX_VALUE[WARMUP_UNTIL]}" = time ]
}

@test "a health path under /actuator/ is asked on the actuator's own port in the server namespace" {
  local -A cell=([TARGET_JAR]=app.jar [TARGET_CMD]='' [MANAGEMENT_PORT]=8081 [TARGET_HEALTH_PATH]=/actuator/health)
  run target_health_probe cell http://198.18.0.1:8080
  assert_output 'server http://127.0.0.1:8081/actuator/health'
  cell[TARGET_HEALTH_PATH]=/readyz
  run target_health_probe cell http://198.18.0.1:8080
  assert_output 'client http://198.18.0.1:8080/readyz'
  # A server command has no actuator of the suite's making.
  cell[TARGET_CMD]='python3 -m http.server'
  cell[TARGET_HEALTH_PATH]=/actuator/health
  run target_health_probe cell http://198.18.0.1:8080
  assert_output 'client http://198.18.0.1:8080/actuator/health'
}

# lt_http_server: a real HTTP server on a free loopback port (python3's, in an
# empty directory: every path but / is a 404); its port in HTTP_PORT.
lt_http_server() {
  mkdir -p "$BATS_TEST_TMPDIR/www"
  HTTP_PORT="$(lt_free_port)"
  python3 -m http.server --bind 127.0.0.1 --directory "$BATS_TEST_TMPDIR/www" "$HTTP_PORT" >/dev/null 2>&1 &
  HTTP_PID=$!
  local i
  for ((i = 0; i < 50; i++)); do
    curl -fsS -o /dev/null "http://127.0.0.1:$HTTP_PORT/" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "the test's HTTP server did not start"
}

teardown() {
  [[ -z "${HTTP_PID:-}" ]] || { kill "$HTTP_PID" 2>/dev/null; wait "$HTTP_PID" 2>/dev/null || true; }
}

@test "a health path the target answers with 404 fails within seconds, naming the path and the fix" {
  lt_http_server
  NETNS_HOST_MODE=1
  local started=$SECONDS
  target_wait_healthy "http://127.0.0.1:$HTTP_PORT/actuator/healthz" 60 true "" client "; hint" || true
  assert_equal "$CELL_ERROR" "target answers 404 (not found) to GET /actuator/healthz at http://127.0.0.1:$HTTP_PORT/actuator/healthz: set TARGET_HEALTH_PATH to a path it answers with 200 once ready; hint"
  ((SECONDS - started <= 6)) || fail "took $((SECONDS - started))s"
  # The same server's / answers 200: healthy at once.
  cell_error ""
  target_wait_healthy "http://127.0.0.1:$HTTP_PORT/" 60 true
  assert_equal "$CELL_ERROR" ""
}

@test "a target that logged it started but does not answer fails within seconds" {
  NETNS_HOST_MODE=1
  printf '2026-11-24 INFO  Tomcat started on port 8080 (http)\n2026-11-24 INFO  Started GreetingApplication in 3.1 seconds (process running for 3.4)\n' >"$BATS_TEST_TMPDIR/target.log"
  local port started=$SECONDS
  # A port nobody listens on.
  port="$(lt_free_port)"
  target_wait_healthy "http://127.0.0.1:$port/health" 60 true "$BATS_TEST_TMPDIR/target.log" || true
  assert_equal "$CELL_ERROR" "target logged 'Started GreetingApplication in 3.1 seconds' but nothing answers GET /health at http://127.0.0.1:$port/health: set TARGET_HEALTH_PATH to a path it answers with 200 once ready"
  ((SECONDS - started <= 6)) || fail "took $((SECONDS - started))s"
}

@test "without either sign the wait lasts TARGET_START_TIMEOUT and names the last answer" {
  NETNS_HOST_MODE=1
  local port
  port="$(lt_free_port)"
  target_wait_healthy "http://127.0.0.1:$port/health" 1 true "$BATS_TEST_TMPDIR/none.log" || true
  assert_equal "$CELL_ERROR" "target did not answer http://127.0.0.1:$port/health within 1s (last answer: none)"
}

@test "a Spring Boot target's health path is asked once its log says Tomcat listens, not every 50 ms before" {
  NETNS_HOST_MODE=1
  # shellcheck disable=SC2317 # SC2317: called by target_wait_healthy, counts its asks
  netns_exec() { printf 'ask\n' >>"$BATS_TEST_TMPDIR/asks"; shift; "$@"; }
  mkdir -p "$BATS_TEST_TMPDIR/www"
  : >"$BATS_TEST_TMPDIR/www/health"
  HTTP_PORT="$(lt_free_port)"
  TARGET_LOG="$BATS_TEST_TMPDIR/target.log"
  TARGET_LOG_SPRING=1
  printf 'INFO --- [main] o.s.b.w.embedded.tomcat.TomcatWebServer  : Tomcat initialized with port %s (http)\n' "$HTTP_PORT" >"$TARGET_LOG"
  # The "JVM": listens 1.5 s later and says so in its log, a line written in two parts.
  (sleep 1.5
    (sleep 0.3
      printf 'INFO --- [main] o.s.b.w.embedded.tomcat.TomcatWebServer  : Tomcat started ' >>"$TARGET_LOG"
      printf 'on port %s (http) with context path '"'/'"'\n' "$HTTP_PORT" >>"$TARGET_LOG") &
    exec python3 -m http.server --bind 127.0.0.1 --directory "$BATS_TEST_TMPDIR/www" "$HTTP_PORT" >/dev/null 2>&1) 3>&- &
  HTTP_PID=$!
  local began=${EPOCHREALTIME/./}
  target_wait_healthy "http://127.0.0.1:$HTTP_PORT/health" 10 true "$TARGET_LOG"
  assert_equal "$CELL_ERROR" ""
  local asks
  asks="$(wc -l <"$BATS_TEST_TMPDIR/asks")"
  # Every 0.25 s for 1.8 s, then one or two: about 9; every 50 ms it was over 20.
  ((asks <= 11)) || fail "asked $asks times"
  # Not later than the log's line allows (1.8 s, and the machine is shared).
  local took_us=$((${EPOCHREALTIME/./} - began))
  ((took_us <= 3500000)) || fail "took $took_us us"
}

@test "waiting on a Spring Boot target's log keeps the 404 and the started-but-silent failures" {
  lt_http_server
  NETNS_HOST_MODE=1
  TARGET_LOG="$BATS_TEST_TMPDIR/target.log"
  TARGET_LOG_SPRING=1
  printf 'INFO  Tomcat started on port %s (http)\n' "$HTTP_PORT" >"$TARGET_LOG"
  local started=$SECONDS
  target_wait_healthy "http://127.0.0.1:$HTTP_PORT/actuator/healthz" 60 true "$TARGET_LOG" client "; hint" || true
  assert_equal "$CELL_ERROR" "target answers 404 (not found) to GET /actuator/healthz at http://127.0.0.1:$HTTP_PORT/actuator/healthz: set TARGET_HEALTH_PATH to a path it answers with 200 once ready; hint"
  ((SECONDS - started <= 6)) || fail "took $((SECONDS - started))s"
  local port
  port="$(lt_free_port)"
  printf '2026-11-24 INFO  Started GreetingApplication in 3.1 seconds (process running for 3.4)\n' >"$TARGET_LOG"
  started=$SECONDS
  target_wait_healthy "http://127.0.0.1:$port/health" 60 true "$TARGET_LOG" || true
  assert_equal "$CELL_ERROR" "target logged 'Started GreetingApplication in 3.1 seconds' but nothing answers GET /health at http://127.0.0.1:$port/health: set TARGET_HEALTH_PATH to a path it answers with 200 once ready"
  ((SECONDS - started <= 6)) || fail "took $((SECONDS - started))s"
  # A log that never says it listens (its logging turned off): still asked, and the timeout names the last answer.
  : >"$TARGET_LOG"
  target_wait_healthy "http://127.0.0.1:$port/health" 1 true "$TARGET_LOG" || true
  assert_equal "$CELL_ERROR" "target did not answer http://127.0.0.1:$port/health within 1s (last answer: none)"
}

@test "a target that exits at start says its exit status and the end of its output, never an empty line" {
  printf 'starting\n\nError: cannot bind 999.1.1.1:8080\n\n\n' >"$BATS_TEST_TMPDIR/target.log"
  (exit 3) &
  TARGET_PID=$!
  cell_error "target exited during start-up"
  target_exit_reason "$BATS_TEST_TMPDIR/target.log"
  assert_equal "$CELL_ERROR" 'target exited during start-up: exit status 3; its output ends: starting | Error: cannot bind 999.1.1.1:8080'
  assert_equal "$TARGET_PID" ""
  : >"$BATS_TEST_TMPDIR/empty.log"
  (exit 1) &
  TARGET_PID=$!
  cell_error "target exited during start-up"
  target_exit_reason "$BATS_TEST_TMPDIR/empty.log"
  assert_equal "$CELL_ERROR" 'target exited during start-up: exit status 1; it wrote nothing'
}

@test "SERVER_PORT equal to MANAGEMENT_PORT is a knob problem, named where it was set" {
  local -A origin=([SERVER_PORT]="m.matrix:2" [MANAGEMENT_PORT]=defaults [TARGET_HEALTH_PATH]=defaults)
  local -A value=([TARGET_CMD]='' [TARGET_URL]='' [BACKEND]=netns [TARGET_HEALTH_PATH]=/health
    [TARGET_ARGS]='' [TARGET_ENV_FILE]='' [TARGET_JAR]='' [SERVER_PORT]='8080 8081' [MANAGEMENT_PORT]=8081)
  run target_knob_problems origin value
  assert_output "m.matrix:2: SERVER_PORT: 8081 is MANAGEMENT_PORT too (defaults); the actuator needs a port of its own"
  origin[MANAGEMENT_PORT]="command line"
  value[SERVER_PORT]=8080 value[MANAGEMENT_PORT]=08080
  run target_knob_problems origin value
  assert_output "command line: MANAGEMENT_PORT: 08080 is SERVER_PORT too (m.matrix:2); the actuator needs a port of its own"
  # A server command has no actuator.
  value[TARGET_CMD]='python3 -m http.server'
  run target_knob_problems origin value
  refute_output --partial "a port of its own"
}

@test "a health path under /actuator/ is taken with every scenario; only nginx in front, which is checked through the port under test, refuses it" {
  local -A origin=([TARGET_HEALTH_PATH]="m.matrix:1" [SERVER_PORT]=defaults [MANAGEMENT_PORT]=defaults)
  local -A value=([TARGET_CMD]='' [TARGET_URL]='' [BACKEND]=netns [TARGET_HEALTH_PATH]=/actuator/health
    [TARGET_ARGS]='' [TARGET_ENV_FILE]='' [TARGET_JAR]='' [SCENARIO]='spike keepalive' [SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081
    [PROXY]=none)
  run target_knob_problems origin value
  assert_output ""
  value[SCENARIO]=tests/fixtures/own-script/spike-test.js
  run target_knob_problems origin value
  assert_output ""
  value[PROXY]="none nginx"
  run target_knob_problems origin value
  assert_output "m.matrix:1: TARGET_HEALTH_PATH: '/actuator/health' is on the actuator's own port, which nginx does not front (PROXY=nginx is checked through the users' port before its load); use a path the application answers on SERVER_PORT, e.g. /readyz (the readiness probe the suite turns on)"
}

@test "TARGET_PATH with a scenario that does not read it is a knob problem, named where it was set" {
  local -A origin=([TARGET_PATH]="m.matrix:3" [TARGET_HEALTH_PATH]=defaults [SERVER_PORT]=defaults [MANAGEMENT_PORT]=defaults)
  local -A value=([TARGET_CMD]='' [TARGET_URL]='' [BACKEND]=netns [TARGET_HEALTH_PATH]=/health [TARGET_ARGS]=''
    [TARGET_ENV_FILE]='' [TARGET_JAR]='' [SCENARIO]='spike waiting-room' [SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081
    [TARGET_PATH]='/owners?lastName=')
  run target_knob_problems origin value
  assert_output "m.matrix:3: TARGET_PATH: the scenario 'waiting-room' does not read it (spike, burst, spike-open, ramp and keepalive do; a script of your own takes it for its warm-up); remove it or choose one of those"
  value[SCENARIO]='spike burst spike-open ramp keepalive'
  run target_knob_problems origin value
  assert_output ""
  # A script of one's own: the path its warm-up asks.
  value[SCENARIO]='tests/fixtures/own-script/ramp-users.js'
  run target_knob_problems origin value
  assert_output ""
}

@test "virtual threads reach Spring Boot as its property, and the cell checks they applied" {
  local -A cell=([SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081 [TOMCAT_VIRTUAL_THREADS]=1)
  run target_spring_env cell 198.18.0.1
  assert_line SPRING_THREADS_VIRTUAL_ENABLED=true
  cell[TOMCAT_VIRTUAL_THREADS]=0
  run target_spring_env cell 198.18.0.1
  assert_line SPRING_THREADS_VIRTUAL_ENABLED=false
  # tomcat.threads.config.max as a Spring Boot 3.5 target answers it: -1 without a pool.
  # shellcheck disable=SC2317 # SC2317: called by target_check_threads, in place of the namespace
  netns_exec() { shift; "$@"; }
  local port=$((20000 + RANDOM % 10000)) root="$BATS_TEST_TMPDIR/www"
  mkdir -p "$root/actuator/metrics"
  printf '{"name":"tomcat.threads.config.max","measurements":[{"statistic":"VALUE","value":-1.0}]}' \
    >"$root/actuator/metrics/tomcat.threads.config.max"
  python3 -m http.server --bind 127.0.0.1 --directory "$root" "$port" >/dev/null 2>&1 3>&- &
  local server=$!
  cell[MANAGEMENT_PORT]=$port cell[TOMCAT_VIRTUAL_THREADS]=1
  local i
  for ((i = 0; i < 50; i++)); do curl -fs -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  run target_check_threads cell
  assert_output '[]'
  cell[TOMCAT_VIRTUAL_THREADS]=0
  run target_check_threads cell
  assert_output '[{"property":"spring.threads.virtual.enabled","cell":"false","effective":"true","source":"/actuator/metrics/tomcat.threads.config.max"}]'
  # A pool where the cell asked for virtual threads: the setting was ignored (Spring AOT, an old Boot).
  printf '{"name":"tomcat.threads.config.max","measurements":[{"statistic":"VALUE","value":4.0}]}' \
    >"$root/actuator/metrics/tomcat.threads.config.max"
  cell[TOMCAT_VIRTUAL_THREADS]=1
  run target_check_threads cell
  assert_output '[{"property":"spring.threads.virtual.enabled","cell":"true","effective":"false (a pool of 4 threads)","source":"/actuator/metrics/tomcat.threads.config.max"}]'
  cell[TOMCAT_VIRTUAL_THREADS]=0
  run target_check_threads cell
  assert_output '[]'
  cell[TOMCAT_VIRTUAL_THREADS]=1
  kill "$server"
  # Nothing answers: virtual threads asked for are not taken on trust.
  run target_check_threads cell
  assert_output --partial '"effective":"unknown (no tomcat.threads.config.max on 127.0.0.1:'
}

@test "target_stop ends a target that has no process group of its own, and the stop does not hang on it" {
  # A background process of this shell: its group is the test's, so the
  # group signal finds no group -PID; the process itself must still go.
  sleep 60 &
  TARGET_PID=$!
  local pid=$! started=$SECONDS
  target_stop
  [ -z "$TARGET_PID" ]
  [ $((SECONDS - started)) -lt 20 ] || fail "target_stop took $((SECONDS - started)) s"
  if pid_running "$pid"; then fail "pid $pid still runs"; fi
}

@test "pid_running: a running process runs, an ended one does not" {
  pid_running "$$"
  sleep 0.1 &
  local pid=$!
  wait "$pid"
  if pid_running "$pid"; then fail "pid $pid still runs"; fi
}
