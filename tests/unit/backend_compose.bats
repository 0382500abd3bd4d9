#!/usr/bin/env bats
# The compose backend's per-cell compose file, from a cell's values.
# shellcheck disable=SC2016,SC2034 # SC2016: jq programs and literal backquotes in single quotes on purpose; SC2034: assigned through a nameref, or read by the sourced library under test

setup() {
  load '../test_helper'
  lt_source_libs envfile matrix results netns target compose backend_compose
  lt_untraced knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  declare -gA CELL=()
  local key
  for key in "${KNOB_ORDER[@]}"; do CELL[$key]="${KNOB_DEFAULT[$key]}"; done
  CELL[SOMAXCONN]=2
  CELL[TOMCAT_ACCEPT_COUNT]=5
  CELL[CLIENT_TCP_SYN_RETRIES]=2
  CELL[CLIENT_IP_LOCAL_PORT_RANGE]=40000-40099
  export LT_RUN_ID=20261122-000000-unit
  mkdir -p "$BATS_TEST_TMPDIR/cells/01_cell"
}

@test "a value is a double-quoted YAML string with \$ doubled, so compose never expands it" {
  run compose_quote 'a\b"c$(touch /tmp/x) `id` ${HOME}'
  assert_output '"a\\b\"c$$(touch /tmp/x) `id` $${HOME}"'
}

@test "the cell's file has the image, no network, the server-side sysctls only, and every knob" {
  run compose_cell_file CELL "$BATS_TEST_TMPDIR/cells/01_cell"
  assert_success
  assert_line '    image: "ltsuite/target:local"'
  assert_line '    network_mode: none'
  assert_line '      ltsuite.cell: "01_cell"'
  assert_line '      net.core.somaxconn: "2"'
  assert_line '      TOMCAT_ACCEPT_COUNT: "5"'
  # Client-side settings are for the client namespace, not the container.
  refute_output --partial 'tcp_syn_retries'
  refute_output --partial 'ip_local_port_range'
  # Every knob is in the environment, once.
  local key
  for key in "${KNOB_ORDER[@]}"; do
    [ "$(grep -c "^      $key: " <<<"$output")" -eq 1 ] || fail "$key: not once in the environment"
  done
}

@test "no server-side sysctl set: the file has no empty sysctls key (compose refuses one)" {
  CELL[SOMAXCONN]=""
  local key
  for key in "${!SYSCTL_SIDE[@]}"; do
    [[ "${SYSCTL_SIDE[$key]}" != server ]] || CELL[$key]=""
  done
  run compose_cell_file CELL "$BATS_TEST_TMPDIR/cells/01_cell"
  assert_success
  refute_line '    sysctls:'
  assert_line '    network_mode: none'
}

@test "a command substitution in a knob reaches the container as text" {
  CELL[STAGES]='5s:10,$(touch /tmp/ltsuite-never)'
  run compose_cell_file CELL "$BATS_TEST_TMPDIR/cells/01_cell"
  assert_line '      STAGES: "5s:10,$$(touch /tmp/ltsuite-never)"'
}

@test "a jar of one's own: its image, Spring Boot's properties and its own settings, no suite knob" {
  printf 'not really a jar\n' >"$BATS_TEST_TMPDIR/app.jar"
  printf '# the application'"'"'s own\nGREETING_WORKMS=1000\n' >"$BATS_TEST_TMPDIR/app.env"
  CELL[TARGET_JAR]="$BATS_TEST_TMPDIR/app.jar"
  CELL[TARGET_ENV_FILE]="$BATS_TEST_TMPDIR/app.env"
  CELL[TARGET_JAVA_OPTS]='-XX:+UseSerialGC -Dgreeting.mode=a$b'
  CELL[TARGET_ARGS]='--spring.profiles.active=load --debug'
  run compose_cell_file CELL "$BATS_TEST_TMPDIR/cells/01_cell"
  assert_success
  assert_line "    image: \"ltsuite/app-$(sha256sum "$BATS_TEST_TMPDIR/app.jar" | cut -c1-12):local\""
  assert_line '    command:'
  assert_line '      - "--spring.profiles.active=load"'
  assert_line '      - "--debug"'
  assert_line '      GREETING_WORKMS: "1000"'
  assert_line '      SERVER_TOMCAT_ACCEPTCOUNT: "5"'
  assert_line '      SERVER_ADDRESS: "0.0.0.0"'
  assert_line "      JDK_JAVA_OPTIONS: \"-Xmx${CELL[SERVER_HEAP]} -Dltsuite.run_id=$LT_RUN_ID -XX:+UseSerialGC -Dgreeting.mode=a\$\$b\""
  # The suite's knobs are its own target's business.
  refute_output --partial 'TOMCAT_ACCEPT_COUNT'
  refute_output --partial 'DELAY_MS'
  # Each name once, or compose refuses the file.
  [ -z "$(sed -n '/^    environment:/,$p' <<<"$output" | awk -F: 'NR > 1 { print $1 }' | sort | uniq -d)" ]
}

@test "the suite's own image: a setting of TARGET_ENV_FILE wins over a knob, and appears once" {
  printf 'DELAY_MS=5\n' >"$BATS_TEST_TMPDIR/app.env"
  CELL[TARGET_ENV_FILE]="$BATS_TEST_TMPDIR/app.env"
  run compose_cell_file CELL "$BATS_TEST_TMPDIR/cells/01_cell"
  assert_line '      DELAY_MS: "5"'
  [ "$(grep -c '^      DELAY_MS: ' <<<"$output")" -eq 1 ]
  [ "$(grep -c '^      SERVER_PORT: ' <<<"$output")" -eq 1 ]
}

# The commands compose_cell_start runs before the container is linked are
# the engine's and the kernel's; here they only say what they were given.
# shellcheck disable=SC2317 # called by compose_cell_start
lt_fake_link() {
  netns_down() { :; }
  compose_target_start() { COMPOSE_TARGET_PID=4242; }
  netns_up() { printf '%s|%s|%s\n' "$@" >"$BATS_TEST_TMPDIR/netns_up.args"; return 1; }
}

@test "CLIENT_ADDRESSES > 1: the client namespace gets every address k6 is given" {
  lt_fake_link
  CELL[CLIENT_ADDR]=198.18.0.2
  CELL[CLIENT_ADDRESSES]=3
  run compose_cell_start CELL "$BATS_TEST_TMPDIR/cells/01_cell" http://198.18.0.1:8080
  assert_failure
  assert_equal "$(cat "$BATS_TEST_TMPDIR/netns_up.args")" "198.18.0.1|198.18.0.2 198.18.0.3 198.18.0.4|4242"
}

@test "one client address by default" {
  lt_fake_link
  run compose_cell_start CELL "$BATS_TEST_TMPDIR/cells/01_cell" http://198.18.0.1:8080
  assert_equal "$(cat "$BATS_TEST_TMPDIR/netns_up.args")" "198.18.0.1|198.18.0.2|4242"
}
