#!/usr/bin/env bats
# The doctor against real listeners in a network namespace of the test's own:
# a listener that asked listen() for 100 under somaxconn=8 gets a backlog of 8
# and the capped finding; a bounded burst of 30 connects past its full queue
# during the window gives the overflow finding with the namespace's own count;
# the doctor changes no sysctl and no listener. The stale-somaxconn incident
# under a real k6 load: the doctor's reproduce.matrix, run by run-matrix.sh,
# gives the host's findings and its overflows a second within a factor of two.
# shellcheck disable=SC2154 # SC2154: output and status are set by bats' run

NS="${LT_DOCTOR_NS:-ltsuite-doctor}"
ADDR=198.18.77.1
PORT=18080
BURST=30

setup() {
  load '../test_helper'
  lt_require_root
  ip netns del "$NS" 2>/dev/null || true
  ip netns add "$NS"
  ip -n "$NS" link set lo up
  ip -n "$NS" addr add "$ADDR/32" dev lo
  ip netns exec "$NS" sysctl -q -w net.core.somaxconn=8
  LISTENER_PID=""
}

teardown() {
  [[ -z "${LISTENER_PID:-}" ]] || { kill "$LISTENER_PID" 2>/dev/null; wait "$LISTENER_PID" 2>/dev/null; } || true
  ip netns del "$NS" 2>/dev/null || true
}

# target: the suite's own target in the namespace, accept-count 10000 under
# somaxconn=8, 4 threads; waits for its actuator (60 s at most).
target() {
  ip netns exec "$NS" env SERVER_ADDRESS="$ADDR" SERVER_PORT="$PORT" MANAGEMENT_PORT=$((PORT + 1)) \
    SERVER_TOMCAT_ACCEPTCOUNT=10000 SERVER_TOMCAT_THREADS_MAX=4 SERVER_TOMCAT_MAXCONNECTIONS=8 \
    java -jar "$LT_ROOT/server/target/loadtest-target.jar" >"$BATS_TEST_TMPDIR/target.log" 2>&1 &
  LISTENER_PID=$!
  local i
  for ((i = 0; i < 600; i++)); do
    ! ip netns exec "$NS" python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
      "http://127.0.0.1:$((PORT + 1))/actuator/health" 2>/dev/null || return 0
    kill -0 "$LISTENER_PID" || return 1
    sleep 0.1
  done
  return 1
}

# listen BACKLOG: a listener in the namespace that never accepts, for 60 s at most.
listen() {
  ip netns exec "$NS" python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(int(sys.argv[3]))
time.sleep(60)' "$ADDR" "$PORT" "$1" &
  LISTENER_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -z "$(ip netns exec "$NS" ss -ltnH "sport = :$PORT")" ]] || return 0
    sleep 0.05
  done
  return 1
}

# burst N [HOLD]: N connects at once, each given HOLD seconds (0.5: before the
# SYN's first retransmission at 1 s), then all closed.
burst() {
  ip netns exec "$NS" python3 -c '
import socket, sys, time
socks = []
for _ in range(int(sys.argv[3])):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex((sys.argv[1], int(sys.argv[2])))
    socks.append(s)
time.sleep(float(sys.argv[4]))
for s in socks:
    s.close()' "$ADDR" "$PORT" "$1" "${2:-0.5}"
}

# overflows: the namespace's TcpExtListenOverflows since it was made.
overflows() {
  ip netns exec "$NS" nstat -asz TcpExtListenOverflows | awk '$1 == "TcpExtListenOverflows" { print $2 }'
}

# state: the namespace's net sysctls and listeners (address and backlog; the
# queue is the burst's).
state() {
  ip netns exec "$NS" sysctl -a 2>/dev/null | grep -E '^net\.(core|ipv4)\.' | grep -v -E 'rt_cache_rebuild_count|^net\.ipv4\.route\.'
  ip netns exec "$NS" ss -ltnH | awk '{ print $1, $3, $4 }'
}

# json PATH EXPR: a value of doctor.json.
json() {
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$1" "$2"
}

# doctor_start OUT WINDOW [ARG...]: the doctor in the namespace, in the
# background (its pid in DOCTOR_PID), its output in doctor.out, returning once
# its first reading is on disk (the window has begun).
doctor_start() {
  local out="$1" window="$2" i
  shift 2
  ip netns exec "$NS" "$LT_ROOT/scripts/doctor.sh" --port "$PORT" --window "$window" --out "$out" "$@" \
    >"$BATS_TEST_TMPDIR/doctor.out" 2>&1 &
  DOCTOR_PID=$!
  for ((i = 0; i < 100; i++)); do
    [[ ! -s "$out/readings/nstat-before.txt" ]] || return 0
    sleep 0.05
  done
}

@test "a burst past a capped backlog: both findings with the namespace's own numbers, nothing changed" {
  listen 100
  local out="$BATS_TEST_TMPDIR/doctor-burst" before after i
  state >"$BATS_TEST_TMPDIR/state-before"
  doctor_start "$out" 3s
  before="$(overflows)"
  burst "$BURST"
  wait "$DOCTOR_PID"
  after="$(overflows)"
  cat "$BATS_TEST_TMPDIR/doctor.out"
  state >"$BATS_TEST_TMPDIR/state-after"
  run diff "$BATS_TEST_TMPDIR/state-before" "$BATS_TEST_TMPDIR/state-after"
  assert_success
  # The queue holds backlog + 1 = 9 (a second CPU may slip one more in).
  local count=$((after - before)) slack=$(($(nproc) - 1))
  ((count >= BURST - 9 - slack && count <= BURST - 9))
  [ "$(json "$out/doctor.json" 'd["counters"]["TcpExtListenOverflows"]')" = "$count" ]
  [ "$(json "$out/doctor.json" '[f["evidence"]["ListenOverflows"] for f in d["findings"] if f["id"] == "accept-queue-overflows"][0]')" = "$count" ]
  [ "$(json "$out/doctor.json" '[f["evidence"] for f in d["findings"] if f["id"] == "backlog-capped-by-somaxconn"][0]')" \
    = "{'listener': '$ADDR:$PORT', 'backlog': 8, 'somaxconn': 8}" ]
  local peak
  peak="$(json "$out/doctor.json" 'd["listeners"][0]["queue_peak"]')"
  ((peak >= 9 && peak <= 9 + slack))
  run cat "$BATS_TEST_TMPDIR/doctor.out"
  assert_output --partial "read-only: no sysctl changed"
  assert_output --partial "[critical] accept-queue-overflows: ListenOverflows, the count of all listeners of this namespace, rose by $count in the last 3"
  grep -qx "SOMAXCONN=8" "$out/reproduce.matrix"
  grep -qx "TOMCAT_ACCEPT_COUNT=8" "$out/reproduce.matrix"
}

@test "the suite's own target: Tomcat's settings from its actuator, the accept-count somaxconn capped" {
  target
  local out="$BATS_TEST_TMPDIR/doctor-target"
  run ip netns exec "$NS" "$LT_ROOT/scripts/doctor.sh" --port "$PORT" --window 1s \
    --actuator "http://127.0.0.1:$((PORT + 1))/actuator" --out "$out"
  assert_success
  assert_output --partial "has a backlog of 8 because net.core.somaxconn=8 caps the 10000 Tomcat's accept-count asks for"
  [ "$(json "$out/doctor.json" '[d["tomcat"][k] for k in ("accept_count", "max_connections", "max_threads", "threads_max")]')" \
    = "[10000, 8, 4, 4.0]" ]
  # Of its configprops only the three properties read reach the disk.
  [ "$(jq -c . "$out/readings/configprops.json")" \
    = '{"prefix":"server","properties":{"tomcat":{"acceptCount":10000,"maxConnections":8,"threads":{"max":4}}}}' ]
  grep -qx "TOMCAT_ACCEPT_COUNT=10000" "$out/reproduce.matrix"
  grep -qx "TOMCAT_MAX_THREADS=4" "$out/reproduce.matrix"
  grep -qx "# the server holds 17 users at once (max-connections + backlog + 1)" "$out/reproduce.matrix"  # 8 + min(10000, 8) + 1
}

@test "somaxconn raised after Tomcat started: the listener keeps its backlog, the capacity and the matrix are the listener's" {
  # Started under somaxconn=8 with accept-count 10000 and max-connections 8: backlog 8.
  target
  ip netns exec "$NS" sysctl -q -w net.core.somaxconn=4096
  local out="$BATS_TEST_TMPDIR/doctor-restart" i
  doctor_start "$out" 3s --actuator "http://127.0.0.1:$((PORT + 1))/actuator"
  # Held 2.5 s: Tomcat accepts 8 and the queue holds 9 across two samples at least.
  burst "$BURST" 2.5
  wait "$DOCTOR_PID"
  cat "$BATS_TEST_TMPDIR/doctor.out"
  [ "$(json "$out/doctor.json" 'd["listeners"][0]["backlog"]')" = 8 ]
  [ "$(json "$out/doctor.json" '{k: v for k, v in [f for f in d["findings"] if f["id"] == "backlog-capped-at-start"][0]["evidence"].items() if k != "listener"}')" \
    = "{'backlog': 8, 'accept_count': 10000, 'somaxconn': 4096, 'backlog_rule': 4096, 'server_capacity': 17, 'server_capacity_after_restart': 4105}" ]
  # The overflows' capacity is the listener's: 8 + 8 + 1, not 8 + min(10000, 4096) + 1.
  [ "$(json "$out/doctor.json" '[(f["evidence"]["accept_queue_capacity"], f["evidence"]["server_capacity"]) for f in d["findings"] if f["id"] == "accept-queue-overflows"][0]')" \
    = "(9, 17)" ]
  run cat "$BATS_TEST_TMPDIR/doctor.out"
  assert_output --partial "holds 8 + 8 + 1 = 17 connections, not 8 + 4096 + 1 = 4105; restart Tomcat to listen again with 4096"
  # The lab starts Tomcat as the host did: min(10000, 8) = 8, and holds 17.
  grep -qx "TOMCAT_ACCEPT_COUNT=10000" "$out/reproduce.matrix"
  grep -qx "TOMCAT_MAX_CONNECTIONS=8" "$out/reproduce.matrix"
  grep -qx "SOMAXCONN=8" "$out/reproduce.matrix"
  grep -qx "# the server holds 17 users at once (max-connections + backlog + 1)" "$out/reproduce.matrix"
  grep -q "^# SOMAXCONN is the listener's backlog, 8, not the host's 4096 now" "$out/reproduce.matrix"
}

@test "a listener within somaxconn and no load: nothing found" {
  listen 4
  local out="$BATS_TEST_TMPDIR/doctor-clean"
  run ip netns exec "$NS" "$LT_ROOT/scripts/doctor.sh" --port "$PORT" --window 1s --out "$out"
  assert_success
  assert_output --partial "listener $ADDR:$PORT backlog=4 queue now=0 peak=0"
  assert_output --partial "[info] nothing-found"
  [ "$(json "$out/doctor.json" '[f["id"] for f in d["findings"]]')" = "['nothing-found']" ]
}

@test "a port nobody listens on, and a window of 0, are refused before anything is read" {
  run ip netns exec "$NS" "$LT_ROOT/scripts/doctor.sh" --port "$PORT" --window 1s --out "$BATS_TEST_TMPDIR/none"
  assert_failure 2
  assert_output "doctor: nothing listens on TCP port $PORT here (ss -ltn)"
  [ ! -e "$BATS_TEST_TMPDIR/none" ]
  listen 4
  run ip netns exec "$NS" "$LT_ROOT/scripts/doctor.sh" --port "$PORT" --window 0s --out "$BATS_TEST_TMPDIR/none"
  assert_failure 2
  assert_output "doctor: WINDOW '0s' is not a whole number of seconds from 1s to 3600s"
  [ ! -e "$BATS_TEST_TMPDIR/none" ]
}

# keepalive_load USERS SECONDS: the suite's keepalive scenario from the namespace against the
# target: USERS kept-alive users asking /hello?delayMs=200, for SECONDS; k6 run in the background
# (its pid in K6_PID), ended by its own duration (and by timeout's 90 s at most).
keepalive_load() {
  ip netns exec "$NS" timeout 90 "$LT_ROOT/.tools/bin/k6" run -q -e TARGET_URL="http://$ADDR:$PORT" \
    -e DELAY_MS=200 -e REQUEST_TIMEOUT=30s -e GRACEFUL_STOP=2s -e THINK_TIME_MS=0 -e VUS="$1" \
    -e REQUESTS_PER_VU=1000 -e CONNECTION_REUSE=1 -e CLIENT_CLOSES=0 -e DURATION="$2s" \
    "$LT_ROOT/scenarios/keepalive.js" >"$BATS_TEST_TMPDIR/k6.out" 2>&1 &
  K6_PID=$!
}

@test "the stale-somaxconn incident under a real k6 load: the doctor's reproduce.matrix gives the same findings and overflows a second within a factor of two" {
  # The host: started under somaxconn=8 (backlog 8: 8 + 8 + 1 = 17 held), somaxconn raised after,
  # and 40 kept-alive users of k6 from the window's start.
  target
  ip netns exec "$NS" sysctl -q -w net.core.somaxconn=4096
  local out="$BATS_TEST_TMPDIR/doctor-load" i
  doctor_start "$out" 8s --actuator "http://127.0.0.1:$((PORT + 1))/actuator"
  keepalive_load 40 12
  wait "$DOCTOR_PID"
  wait "$K6_PID" || true
  cat "$BATS_TEST_TMPDIR/doctor.out"
  cat "$out/reproduce.matrix"
  # syn-cookies comes too when 8 or more of the 40 SYNs arrive together (the SYN queue holds as many
  # half-open connections as the backlog, 8): how they bunch is the scheduler's, so it may or may not.
  [ "$(json "$out/doctor.json" 'sorted(f["id"] for f in d["findings"] if f["id"] != "syn-cookies")')" \
    = "['accept-queue-overflows', 'backlog-capped-at-start', 'threads-busy-at-max']" ]
  # The load as estimated: 40 users (17 held + those waiting), the endpoint's 200 ms.
  local users delay host_rate
  users="$(json "$out/doctor.json" 'int(d["load"]["users"]["value"])')"
  delay="$(json "$out/doctor.json" 'round(d["load"]["service_ms"]["value"])')"
  ((users >= 30 && users <= 50))
  # Counted from the waves of ListenOverflows read every 100 ms (docs/doctor.md, "The load").
  json "$out/doctor.json" 'd["load"]["waiting"]["source"]' | grep -q "^ListenOverflows every 100 ms: the median size of its"
  ((delay >= 195 && delay <= 260))
  grep -qx "VUS=$users" "$out/reproduce.matrix"
  grep -qx "SCENARIO=keepalive" "$out/reproduce.matrix"
  host_rate="$(json "$out/doctor.json" '[f["evidence"]["per_s"] for f in d["findings"] if f["id"] == "accept-queue-overflows"][0]')"
  # The host's Tomcat is stopped before the lab's starts (the machine's two cores are the lab's).
  kill "$LISTENER_PID"
  wait "$LISTENER_PID" 2>/dev/null || true
  LISTENER_PID=""
  export LT_RESULTS_DIR="$BATS_TEST_TMPDIR/results"
  run env K6_HTML_REPORT=0 MONITORING=off "$LT_ROOT/scripts/run-matrix.sh" "$out/reproduce.matrix"
  assert_success
  local row
  row="$(find "$(readlink -f "$LT_RESULTS_DIR/latest")" -name row.json | head -n 1)"
  # The same server: backlog 8 capped as the host's was, its queue full at 9, 17 held, all 4 threads busy.
  [ "$(json "$row" '[d[k] for k in ("listen_backlog", "accept_queue_peak", "server_conns_peak", "tomcat_threads_busy_peak")]')" \
    = "[8, 9, 17, 4]" ]
  # Overflows a second (the row's count over the matrix's DURATION) within a factor of two of the host's.
  local within
  within="$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); lab = d["listen_overflows"] / float(sys.argv[3]); host = float(sys.argv[2]); print(lab, host, host / 2 <= lab <= 2 * host)' \
    "$row" "$host_rate" "$(sed -n 's/^DURATION=\([0-9]*\)s$/\1/p' "$out/reproduce.matrix")")"
  echo "lab, host overflows a second: $within"
  [[ "$within" == *" True" ]]
}
