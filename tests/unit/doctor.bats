#!/usr/bin/env bats
# make doctor's arguments reach scripts/doctor.sh as single words and bad ones
# are refused with their name; the matrix it writes is one the lab loads as is.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the sourced library under test

setup() {
  load '../test_helper'
  bats_require_minimum_version 1.5.0
  MARK="$BATS_TEST_TMPDIR/ran"
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  OPEN_DIR=""
}

teardown() {
  [[ -z "$OPEN_DIR" ]] || rm -rf "$OPEN_DIR"
  [[ -z "${HTTP_PID:-}" ]] || { kill "$HTTP_PID" 2>/dev/null; wait "$HTTP_PID" 2>/dev/null || true; }
}

# doctor_copy DIR: the doctor as docs/doctor.md takes it to a host, doctor.sh
# and the modules beside it, in DIR (readable by every user).
doctor_copy() {
  local module
  mkdir -p "$1/ltsuite"
  cp "$LT_ROOT/scripts/doctor.sh" "$1/"
  for module in __init__ doctor doctorcompare rules counters cellfiles numbers sysctl_names; do
    cp "$LT_ROOT/scripts/ltsuite/$module.py" "$1/ltsuite/"
  done
  chmod -R a+rX "$1"
}

# doctor_fake_host DIR PID: DIR/ss and DIR/nstat answering doctor.sh as a
# host's iproute2 would: one listener on :8080, of process PID; no socket in
# TIME-WAIT or SYN-RECV; no listen counter.
doctor_fake_host() {
  mkdir -p "$1"
  cat >"$1/ss" <<EOF
#!/usr/bin/env bash
case "\$1" in
  -ltnH) echo 'LISTEN 0 128 0.0.0.0:8080 0.0.0.0:*' ;;
  -ltnpH) echo 'LISTEN 0 128 0.0.0.0:8080 0.0.0.0:* users:(("init",pid=$2,fd=3))' ;;
esac
EOF
  cat >"$1/nstat" <<'EOF'
#!/usr/bin/env bash
printf '#kernel\nTcpExtListenOverflows 0 0.0\n'
EOF
  chmod 755 "$1/ss" "$1/nstat"
}

@test "make doctor PORT='1;touch FILE' is a wrong port, not a command" {
  run make --no-print-directory -C "$LT_ROOT" doctor "PORT=1;touch $MARK"
  assert_failure
  assert_output --partial "doctor: PORT '1;touch $MARK' is not a TCP port (1-65535)"
  [ ! -e "$MARK" ]
}

@test "a window of 0, or not in seconds, is refused with its value" {
  run "$LT_ROOT/scripts/doctor.sh" --port 8080 --window 0
  assert_failure 2
  assert_output "doctor: WINDOW '0' is not a whole number of seconds from 1s to 3600s"
  run "$LT_ROOT/scripts/doctor.sh" --port 8080 --window 2m
  assert_failure 2
  assert_output --partial "WINDOW '2m'"
  run "$LT_ROOT/scripts/doctor.sh" --port 8080 --actuator 'file:///etc/passwd'
  assert_failure 2
  assert_output "doctor: ACTUATOR 'file:///etc/passwd' is not an http(s) URL"
  [ ! -e "$LT_RESULTS_DIR" ]
}

@test "reproduce.matrix of every recorded reading loads as a matrix of one cell (no axis, for make advise); the lab's backlog is the listener's" {
  lt_source_libs envfile matrix
  lt_untraced knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  LT_PROG="test"
  local reading out backlog accept somaxconn
  for reading in "$LT_ROOT"/tests/python/fixtures/doctor/*/; do
    out="$BATS_TEST_TMPDIR/doctor-$(basename "$reading")"
    mkdir -p "$out"
    PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.doctor report "$reading" "$out" >/dev/null
    matrix_init
    matrix_load "$out/reproduce.matrix"
    [ "$(matrix_cell_count)" = 1 ]
    [ "${MATRIX_VALUE[SCENARIO]}" = keepalive ]
    # The lab's min(accept-count, somaxconn) is the backlog the host's listener holds (ss's Send-Q).
    backlog="$(awk '$1 == "LISTEN" { b = $3 } END { print b }' "$reading/ss-listen.txt")"
    accept="${MATRIX_VALUE[TOMCAT_ACCEPT_COUNT]}" somaxconn="${MATRIX_VALUE[SOMAXCONN]}"
    [ "$((accept < somaxconn ? accept : somaxconn))" = "$backlog" ]
    # SOMAXCONN is the host's unless a comment says why not.
    grep -q "^# SOMAXCONN is the listener's backlog, $backlog," "$out/reproduce.matrix" \
      || [ "$somaxconn" = "$(awk -F'\t' '$1 == "net.core.somaxconn" { print $2 }' "$reading/sysctls.tsv")" ]
  done
}

@test "reproduce.matrix is make advise's input as it is written: its goal and knobs checked, no refusal" {
  # A recorded reading of a real incident (40 kept-alive users past a capped backlog). GOAL_P99_MS
  # below the endpoint's 202 ms, from the environment (the file stays as written), makes the
  # model answer without a cell: exit 3, not the refusal's 2.
  local out="$BATS_TEST_TMPDIR/doctor-load" dir
  mkdir -p "$out"
  PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.doctor report "$LT_ROOT/tests/python/fixtures/doctor/stale-somaxconn-load" "$out" >/dev/null
  run -3 env GOAL_P99_MS=100 "$LT_ROOT/scripts/advise.sh" "$out/reproduce.matrix"
  assert_line --partial "cannot recommend: one request takes 202 ms (DELAY_MS 202)"
  dir=("$LT_RESULTS_DIR"/advise-*-reproduce.matrix)
  jq -e '.cells == []' "${dir[0]}/advice.json"
  run cat "${dir[0]}/advice.md"
  assert_line --partial "Goal: keepalive, 41 users with kept-alive connections"
}

@test "a doctor run writes nothing beside its copied scripts: no __pycache__" {
  local copy="$BATS_TEST_TMPDIR/host"
  doctor_copy "$copy"
  doctor_fake_host "$BATS_TEST_TMPDIR/bin" "$$"
  # A host's environment: nothing there turns Python's bytecode writing off.
  run env -u PYTHONDONTWRITEBYTECODE PATH="$BATS_TEST_TMPDIR/bin:$PATH" \
    "$copy/doctor.sh" --port 8080 --window 1s --out "$BATS_TEST_TMPDIR/out"
  assert_success
  [ -s "$BATS_TEST_TMPDIR/out/doctor.json" ]
  run find "$copy" -name __pycache__
  assert_output ""
}

@test "BEFORE: a reading of the same host and port is compared after the window; another, or none, is refused before it" {
  local copy="$BATS_TEST_TMPDIR/host"
  doctor_copy "$copy"
  doctor_fake_host "$BATS_TEST_TMPDIR/bin" "$$"
  run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" "$copy/doctor.sh" --port 8080 --window 1s --out "$BATS_TEST_TMPDIR/first"
  assert_success
  run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" "$copy/doctor.sh" --port 8080 --window 1s \
    --before "$BATS_TEST_TMPDIR/first" --out "$BATS_TEST_TMPDIR/second"
  assert_success
  assert_line "  settings changed: none"
  assert_line --partial "  findings gone: none; new: none; still there: nothing-found"
  jq -e '[.changes[] | select(.changed)] == []' "$BATS_TEST_TMPDIR/second/compare.json"
  # A directory that holds no reading, and a reading of another port: exit 2, no window read.
  run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" "$copy/doctor.sh" --port 8080 --window 1s \
    --before "$BATS_TEST_TMPDIR" --out "$BATS_TEST_TMPDIR/third"
  assert_failure 2
  assert_output --partial "doctor: $BATS_TEST_TMPDIR/doctor.json: not a doctor's reading"
  [ ! -e "$BATS_TEST_TMPDIR/third" ]
  jq '.port = 9090' "$BATS_TEST_TMPDIR/first/doctor.json" >"$BATS_TEST_TMPDIR/other.json"
  mv "$BATS_TEST_TMPDIR/other.json" "$BATS_TEST_TMPDIR/first/doctor.json"
  run env PATH="$BATS_TEST_TMPDIR/bin:$PATH" "$copy/doctor.sh" --port 8080 --window 1s \
    --before "$BATS_TEST_TMPDIR/first" --out "$BATS_TEST_TMPDIR/third"
  assert_failure 2
  assert_output "doctor: $BATS_TEST_TMPDIR/first/doctor.json: a reading of port 9090 on $(uname -n), not of port 8080 on $(uname -n): compare two readings of the same host and port"
  [ ! -e "$BATS_TEST_TMPDIR/third" ]
}

@test "open files of a process whose /proc/PID/fd cannot be listed are unmeasured (empty), not 0" {
  # pid 1 is root's: another user cannot list its fd directory (root runs the doctor as nobody).
  local -a as_other=()
  if [[ $EUID -eq 0 ]]; then
    command -v setpriv >/dev/null || skip "needs util-linux's setpriv to run the doctor as nobody"
    as_other=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  fi
  ! "${as_other[@]}" ls /proc/1/fd >/dev/null 2>&1 || skip "/proc/1/fd can be listed by this user"
  "${as_other[@]}" bash -c "python3 -c ''" 2>/dev/null || skip "the other user finds no python3 on PATH"
  OPEN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/doctor-test.XXXXXX")"
  chmod 755 "$OPEN_DIR"
  doctor_copy "$OPEN_DIR/host"
  doctor_fake_host "$OPEN_DIR/bin" 1
  mkdir -m 1777 "$OPEN_DIR/results"
  PATH="$OPEN_DIR/bin:$PATH" run "${as_other[@]}" "$OPEN_DIR/host/doctor.sh" --port 8080 --window 1s \
    --out "$OPEN_DIR/results/out"
  assert_success
  run cat "$OPEN_DIR/results/out/readings/process.tsv"
  assert_line $'pid\t1'
  assert_line $'open_files\t'
  jq -e '.process.open_files == "" and ([.findings[].id] | index("open-files-near-limit") == null)' \
    "$OPEN_DIR/results/out/doctor.json"
}

# fake_actuator ROOT: python's http.server on a free 127.0.0.1 port serving
# ROOT as the actuator's answers (ROOT/actuator/...), in this shell (its pid in
# HTTP_PID, for teardown: not in a command substitution, whose shell would
# keep it), its port in ACTUATOR_PORT once it answers.
fake_actuator() {
  local i
  ACTUATOR_PORT="$(lt_free_port)"
  python3 -m http.server --bind 127.0.0.1 --directory "$1" "$ACTUATOR_PORT" >/dev/null 2>&1 3>&- &
  HTTP_PID=$!
  for ((i = 0; i < 50; i++)); do
    curl -fs -o /dev/null "http://127.0.0.1:$ACTUATOR_PORT/" && break
    sleep 0.1
  done
}

# with_secret SECRET FILE: the configprops FILE with SECRET as a datasource's
# password (show-values=always shows it, in its own bean and its inputs) and as
# server.ssl.key-password inside the server bean.
with_secret() {
  jq --arg secret "$1" '(.contexts[] .beans) |= (
      .["spring.datasource-org.springframework.boot.autoconfigure.jdbc.DataSourceProperties"] =
        {prefix: "spring.datasource", properties: {password: $secret, url: "jdbc:postgresql://db/app"},
         inputs: {password: {value: $secret, origin: "System Environment Property"}}}
      | with_entries(if .value.prefix == "server" then .value.properties.ssl = {keyPassword: $secret} else . end))' "$2"
}

@test "no file the doctor writes holds a password the actuator shows: the server prefix, or the whole document read in memory" {
  local secret="doctor-unit-s3cret-$RANDOM$RANDOM" root="$BATS_TEST_TMPDIR/www" port
  doctor_fake_host "$BATS_TEST_TMPDIR/bin" "$$"
  # Spring Boot 4: /actuator/configprops/server answers its server and server.tomcat beans.
  mkdir -p "$root/actuator/configprops"
  with_secret "$secret" "$LT_ROOT/tests/fixtures/configprops-boot4.json" >"$root/actuator/configprops/server"
  grep -qF "$secret" "$root/actuator/configprops/server"
  fake_actuator "$root"
  port="$ACTUATOR_PORT"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run "$LT_ROOT/scripts/doctor.sh" --port 8080 --window 1s \
    --actuator "http://127.0.0.1:$port/actuator" --out "$BATS_TEST_TMPDIR/boot4"
  assert_success
  jq -e '[.tomcat.accept_count, .tomcat.max_connections, .tomcat.max_threads] == [10, 7, 20]' "$BATS_TEST_TMPDIR/boot4/doctor.json"
  run grep -rlF "$secret" "$BATS_TEST_TMPDIR/boot4"
  assert_output ""
  lt_end "$HTTP_PID"
  # An actuator without /configprops/server (404): the whole document, read in memory.
  rm -rf "$root" && mkdir -p "$root/actuator"
  with_secret "$secret" "$LT_ROOT/tests/fixtures/configprops-boot2.json" >"$root/actuator/configprops"
  fake_actuator "$root"
  port="$ACTUATOR_PORT"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run "$LT_ROOT/scripts/doctor.sh" --port 8080 --window 1s \
    --actuator "http://127.0.0.1:$port/actuator" --out "$BATS_TEST_TMPDIR/whole"
  assert_success
  jq -e '[.tomcat.accept_count, .tomcat.max_connections, .tomcat.max_threads] == [100, 8192, 7]' "$BATS_TEST_TMPDIR/whole/doctor.json"
  run grep -rlF "$secret" "$BATS_TEST_TMPDIR/whole"
  assert_output ""
}
