#!/usr/bin/env bats
# The sampler (lib/sampler.py) against the kernel of this host: real sockets
# on the loopback, no namespaces (those belong to the runner). The probe reads
# what ss reads (sock_diag); the run mode keeps to its time grid.
# Each @test runs in its own subshell on purpose: state set in one never leaks.
# shellcheck disable=SC2016,SC2034 # SC2016: jq programs and literal backquotes in single quotes on purpose; SC2034: assigned through a nameref, or read by the sourced library under test
# shellcheck disable=SC2030,SC2031

setup() {
  load '../test_helper'
  lt_source_libs sampler
  LT_PROG="test"
  LT_RUN_ID="sampler-test-$$"
  NETNS_HOST_MODE=1
  LISTENER_PID=""
  BURNERS=()
}

teardown() {
  sampler_stop
  if [[ -n "$LISTENER_PID" ]]; then
    kill "$LISTENER_PID" 2>/dev/null || true
    wait "$LISTENER_PID" 2>/dev/null || true
  fi
  local pid
  for pid in "${BURNERS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
}

# start_listener: a listener on 127.0.0.1 with a backlog of 5, three clients
# connected and one of them accepted; its port goes to LISTEN_PORT. It lives
# 30 s at most.
start_listener() {
  python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
clients = [socket.create_connection(s.getsockname()) for _ in range(3)]
accepted, _ = s.accept()
print(s.getsockname()[1], flush=True)
time.sleep(30)
' >"$BATS_TEST_TMPDIR/port" &
  LISTENER_PID=$!
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s "$BATS_TEST_TMPDIR/port" ]] && break
    sleep 0.1
  done
  LISTEN_PORT="$(cat "$BATS_TEST_TMPDIR/port")"
  [[ -n "$LISTEN_PORT" ]] || fail "the listener did not start"
}

@test "a probe counts what ss counts on the port: accept queue, backlog, connections per state" {
  start_listener
  printf '\n\n' | python3 "$SAMPLER_PROGRAM" probe --port "$LISTEN_PORT" >"$BATS_TEST_TMPDIR/probe.out"
  # "ready", then one line per line asked.
  [ "$(wc -l <"$BATS_TEST_TMPDIR/probe.out")" -eq 3 ]
  [ "$(head -n 1 "$BATS_TEST_TMPDIR/probe.out")" = ready ]
  # Two connections wait in the accept queue of 5; the listener's three ends are
  # established (its clients' ends beside it are not the server's connections);
  # no metrics without a management port, no proxy's TIME-WAIT without --proxy-port.
  [ "$(sed -n 2p "$BATS_TEST_TMPDIR/probe.out")" = "$(printf '2\t5\t3\t0\t0\t\t\t\t')" ]
  # The same as ss says.
  [ "$(ss -Htan "sport = :$LISTEN_PORT" | awk '$1 == "LISTEN" { print $2 "/" $3 }')" = 2/5 ]
  [ "$(ss -Htan "sport = :$LISTEN_PORT" | awk '$1 == "ESTAB"' | wc -l)" -eq 3 ]
}

@test "rows keep to start + k x interval: no drift, the header unchanged, the cost recorded" {
  start_listener
  sampler_start "$BATS_TEST_TMPDIR/samples.tsv" "$LISTEN_PORT" "" 0.25 8
  wait "$SAMPLER_PID"
  SAMPLER_PID=""
  [ "$(head -n 1 "$BATS_TEST_TMPDIR/samples.tsv")" = "$SAMPLES_HEADER" ]
  # 8 ticks: each a row, or (on a machine too busy to take it in time) counted as missed.
  jq -e '.ticks == 8 and .samples >= 5 and .cpu_s > 0 and .wall_s >= 1.75 and .probes == ["client"]' \
    "$BATS_TEST_TMPDIR/sampler.json"
  [ "$(wc -l <"$BATS_TEST_TMPDIR/samples.tsv")" -eq $(($(jq .samples "$BATS_TEST_TMPDIR/sampler.json") + 1)) ]
  # Every row has the header's columns and the listener's 3 connections.
  awk -F'\t' 'NR > 1 && (NF != 14 || $7 != 3) { exit 1 }' "$BATS_TEST_TMPDIR/samples.tsv"
  # Every row lies on the grid of the first, within 0.1 s, at a later point of it, and the
  # last is no further than the 8th point: a pause added after each sample's work would
  # fall further behind with every row.
  awk -F'\t' 'NR == 2 { t0 = $1; last = 0 }
    NR > 2 { k = int(($1 - t0) / 0.25 + 0.5); off = $1 - t0 - k * 0.25
      if (off < -0.1 || off > 0.1 || k <= last || k > 7) { print "row " NR - 1 " at point " k " off by " off; exit 1 }
      last = k }' "$BATS_TEST_TMPDIR/samples.tsv"
}

@test "the client's sockets are counted on the port the users load when it is not the server's" {
  start_listener
  # Port 1 has nothing; the users' port is the listener's (nginx's PROXY_PORT in a cell).
  sampler_start "$BATS_TEST_TMPDIR/samples.tsv" 1 "" 0.25 2 "" "$LISTEN_PORT"
  wait "$SAMPLER_PID"
  SAMPLER_PID=""
  awk -F'\t' 'NR > 1 && $7 != 3 { bad = 1 } END { exit bad || NR < 2 }' "$BATS_TEST_TMPDIR/samples.tsv"
  sampler_start "$BATS_TEST_TMPDIR/samples-1.tsv" 1 "" 0.25 2
  wait "$SAMPLER_PID"
  SAMPLER_PID=""
  awk -F'\t' 'NR > 1 && $7 != 0 { bad = 1 } END { exit bad || NR < 2 }' "$BATS_TEST_TMPDIR/samples-1.tsv"
}

@test "a stop ends the sampler at once, mid-pause; it reads the sockets itself, with no process of its own" {
  start_listener
  sampler_start "$BATS_TEST_TMPDIR/samples.tsv" "$LISTEN_PORT" "" 30 5
  local pid="$SAMPLER_PID" start i
  for ((i = 0; i < 100; i++)); do # until the first row is in: the sampler then pauses 30 s
    [[ "$(wc -l <"$BATS_TEST_TMPDIR/samples.tsv")" -eq 2 ]] && break
    sleep 0.1
  done
  run pgrep -P "$pid"
  [ "$status" -eq 1 ] || fail "the sampler started a process: $output"
  start="$(date +%s%N)"
  sampler_stop
  [ $(($(date +%s%N) - start)) -lt 2000000000 ]
  [ ! -e "/proc/$pid" ]
  [ "$(wc -l <"$BATS_TEST_TMPDIR/samples.tsv")" -eq 2 ]
}

@test "the k6 processes of this run are read from /proc: their CPU and memory, added up, fill the last columns" {
  start_listener
  # Stand-ins named k6 that hold 40 MB each and spin (20 s at most), marked like the
  # runner's (-e LT_RUN_ID=...): two of this run (as K6_INSTANCES=2 runs two)
  # and one of another run.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cp "$(command -v bash)" "$BATS_TEST_TMPDIR/bin/k6"
  local hold='x="$(head -c 40000000 /dev/zero | tr "\\0" a)"; end=$((SECONDS + 20)); while ((SECONDS < end)); do :; done'
  local mark
  for mark in "$LT_RUN_ID" "$LT_RUN_ID" another-run; do
    "$BATS_TEST_TMPDIR/bin/k6" -c "$hold" k6 -e "LT_RUN_ID=$mark" &
    BURNERS+=($!)
  done
  local i pid now="" before
  for ((i = 0; i < 100; i++)); do # until each holds its 40 MB and grows no more
    before="$now"
    now=""
    for pid in "${BURNERS[@]}"; do now+=" $(rss_kb "$pid")"; done
    [[ "$now" == "$before" && " $now " != *" "[0-9]" "* && $(echo "$now" | awk '{ print ($1 > 40000 && $2 > 40000 && $3 > 40000) }') == 1 ]] && break
    sleep 0.3
  done
  sampler_start "$BATS_TEST_TMPDIR/samples.tsv" "$LISTEN_PORT" "" 0.5 5
  wait "$SAMPLER_PID"
  SAMPLER_PID=""
  local mine=$(($(rss_kb "${BURNERS[0]}") + $(rss_kb "${BURNERS[1]}"))) theirs
  theirs="$(rss_kb "${BURNERS[2]}")"
  kill "${BURNERS[@]}"
  wait "${BURNERS[@]}" || true
  BURNERS=()
  # The last row's resident size is the two of this run's (within 5 %), not
  # the third's too; the rows after the first have a CPU figure.
  awk -F'\t' -v mine="$mine" -v theirs="$theirs" 'END { mb = $12 * 1024
      if (mb < mine * 0.95 || mb > mine * 1.05 || theirs < mine * 0.1) { print "rss: " $0 " vs " mine " kB"; exit 1 } }' \
    "$BATS_TEST_TMPDIR/samples.tsv"
  awk -F'\t' 'NR > 2 && $11 !~ /^[0-9]+\.[0-9]$/ { print "cpu: " $0; exit 1 }' "$BATS_TEST_TMPDIR/samples.tsv"
}

# rss_kb PID: the resident size of a process in kB (0 if unreadable).
rss_kb() {
  awk '$1 == "VmRSS:" { print $2; found = 1 } END { if (!found) print 0 }' "/proc/$1/status" 2>/dev/null || echo 0
}

@test "LT_SAMPLER=off writes the header only and starts nothing" {
  LT_SAMPLER=off sampler_start "$BATS_TEST_TMPDIR/samples.tsv" 9 "" 1 5
  [ -z "$SAMPLER_PID" ]
  [ "$(cat "$BATS_TEST_TMPDIR/samples.tsv")" = "$SAMPLES_HEADER" ]
}

@test "the program's columns are samples.tsv's header" {
  run python3 -c 'import importlib.util, sys
spec = importlib.util.spec_from_file_location("sampler", sys.argv[1])
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
print("\t".join(module.COLUMNS))' "$SAMPLER_PROGRAM"
  assert_output "$SAMPLES_HEADER"
}
