#!/usr/bin/env bats
# Where the users go with and without nginx in front (scripts/lib/proxy.sh).
# shellcheck disable=SC2034 # SC2034: the cells are read through proxy_url's nameref

setup() {
  load '../test_helper'
  lt_source_libs netns
  STARTED_PIDS=()
}

teardown() {
  # What a failed test started (nginx, its upstream): by pid.
  lt_end ${STARTED_PIDS[@]+"${STARTED_PIDS[@]}"}
}

@test "proxy_url: with PROXY=nginx the users load nginx's port on the server's address" {
  local -A cell=([PROXY]=nginx [SERVER_ADDR]=198.18.0.1 [SERVER_PORT]=8080 [PROXY_PORT]=8090)
  run proxy_url cell http://198.18.0.1:8080
  assert_output http://198.18.0.1:8090
}

@test "proxy_url: without a proxy (none or unset) the users load the target's URL" {
  local -A cell=([PROXY]=none [SERVER_ADDR]=198.18.0.1 [PROXY_PORT]=8090)
  run proxy_url cell http://198.18.0.1:8080
  assert_output http://198.18.0.1:8080
  local -A bare=([SERVER_ADDR]=198.18.0.1)
  run proxy_url bare http://198.18.0.1:8080
  assert_output http://198.18.0.1:8080
}

@test "proxy_start and proxy_stop do nothing without a proxy" {
  local -A cell=([PROXY]=none)
  proxy_start cell "$BATS_TEST_TMPDIR"
  [ -z "$PROXY_PID" ]
  proxy_alive
  proxy_stop
  [ ! -e "$BATS_TEST_TMPDIR/nginx.conf" ]
}

@test "proxy_knob_problems: nginx's knobs are refused only when no cell has nginx in front" {
  local -A origin=([PROXY]=defaults [PROXY_PORT]=defaults [PROXY_CONNECT_TIMEOUT]=m.matrix:3)
  local -A value=([PROXY]=none [PROXY_CONNECT_TIMEOUT]=1s)
  run proxy_knob_problems origin value
  assert_output "m.matrix:3: PROXY_CONNECT_TIMEOUT: a setting of nginx in front, but PROXY is none (defaults) in every cell; set PROXY=nginx or remove PROXY_CONNECT_TIMEOUT"
  value[PROXY]="none nginx"
  run proxy_knob_problems origin value
  assert_output ''
  origin[PROXY_CONNECT_TIMEOUT]=defaults value[PROXY]=none
  run proxy_knob_problems origin value
  assert_output ''
}

@test "proxy_knob_problems: a PROXY_PORT that is the target's SERVER_PORT or MANAGEMENT_PORT is refused, naming both" {
  local -A origin=([PROXY]=m.matrix:1 [PROXY_PORT]=m.matrix:2 [SERVER_PORT]=defaults [MANAGEMENT_PORT]=defaults)
  local -A value=([PROXY]=nginx [PROXY_PORT]=8080 [SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081)
  run proxy_knob_problems origin value
  assert_output "m.matrix:2: PROXY_PORT: 8080 is SERVER_PORT too (defaults); nginx needs a port of its own"
  value[PROXY_PORT]="8090 8081"
  run proxy_knob_problems origin value
  assert_output "m.matrix:2: PROXY_PORT: 8081 is MANAGEMENT_PORT too (defaults); nginx needs a port of its own"
  value[PROXY_PORT]=8090
  run proxy_knob_problems origin value
  assert_output ''
  # Without nginx in any cell the port is another matter (the knob is refused as unused).
  value[PROXY]=none value[PROXY_PORT]=8080
  run proxy_knob_problems origin value
  refute_output --partial 'nginx needs a port of its own'
}

@test "nginx's config: a response larger than its buffers passes under a root-only checkout, and a cell path with a space is taken" {
  lt_require_root
  local top="$BATS_TEST_TMPDIR/root only" cell upstream_port proxy_port server pid size
  # A checkout under /root: a directory only its owner may enter.
  mkdir -m 700 "$top"
  cell="$top/cell 01"
  mkdir -p "$cell/nginx-temp"
  upstream_port="$(lt_free_port)"
  proxy_port="$(lt_free_port)"
  # 8 MB, far above nginx's proxy buffers (8 x 4 kB), read by a slow user:
  # nginx spools it to proxy_temp_path.
  head -c 8000000 /dev/zero | tr '\0' x >"$BATS_TEST_TMPDIR/big"
  (cd "$BATS_TEST_TMPDIR" && exec python3 -m http.server "$upstream_port" --bind 127.0.0.1) >/dev/null 2>&1 3>&- &
  server=$!
  STARTED_PIDS+=("$server")
  printf '%s\n' SERVER_ADDR=127.0.0.1 "SERVER_PORT=$upstream_port" "PROXY_PORT=$proxy_port" >"$cell/cell.env"
  PYTHONPATH="$LT_ROOT/scripts" python3 -m ltsuite.proxy config "$cell" >"$cell/nginx.conf"
  nginx -e "$cell/nginx-error.log" -c "$cell/nginx.conf" >/dev/null 2>&1 3>&- &
  pid=$!
  STARTED_PIDS+=("$pid")
  local i
  for ((i = 0; i < 100; i++)); do
    curl -fsS -o /dev/null "http://127.0.0.1:$upstream_port/big" 2>/dev/null \
      && [[ -n "$(ss -Hltn "sport = :$proxy_port")" ]] && break
    sleep 0.1
  done
  size="$(curl -sS -o /dev/null -w '%{http_code} %{size_download}' --limit-rate 4M --max-time 20 \
    "http://127.0.0.1:$proxy_port/big")"
  lt_end "$pid" "$server"
  [ "$size" = "200 8000000" ] || fail "through nginx: $size; its error log: $(cat "$cell/nginx-error.log")"
  run grep -c 'Permission denied' "$cell/nginx-error.log"
  assert_output 0
}
