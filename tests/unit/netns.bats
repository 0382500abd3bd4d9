#!/usr/bin/env bats
# The namespaces' sysctls: written and read with one sysctl process a side.
# (The real namespaces and their effective values: tests/integration.)

setup() {
  load '../test_helper'
  lt_source_libs matrix netns
  # shellcheck disable=SC2034 # SC2034: read by netns.sh
  declare -gA SYSCTL_SIDE=([SOMAXCONN]=server [TCP_SYNCOOKIES]=server [CLIENT_IP_LOCAL_PORT_RANGE]=client
    [CLIENT_TCP_SYN_RETRIES]=client [RMEM_MAX]=global)
  # shellcheck disable=SC2034 # SC2034: read by netns.sh
  declare -gA SYSCTL_NAME=([SOMAXCONN]=net.core.somaxconn [TCP_SYNCOOKIES]=net.ipv4.tcp_syncookies
    [CLIENT_IP_LOCAL_PORT_RANGE]=net.ipv4.ip_local_port_range [CLIENT_TCP_SYN_RETRIES]=net.ipv4.tcp_syn_retries
    [RMEM_MAX]=net.core.rmem_max)
  CALLS="$BATS_TEST_TMPDIR/calls"
  : >"$CALLS"
  # A namespace's sysctl: each call logged; somaxconn refuses a word, and
  # the client side's kernel has no tcp_syn_retries (it can be written, not read).
  # shellcheck disable=SC2317 # SC2317: called by netns.sh's functions, which the tests run
  netns_exec() {
    local side="$1"
    shift
    printf '%s %s\n' "$side" "$*" >>"$CALLS"
    [[ "$1" == sysctl ]] || return 1
    shift
    local arg status=0
    for arg in "$@"; do
      case "$arg" in
        -*) ;;
        net.core.somaxconn=[0-9]* | net.ipv4.tcp_syncookies=[0-2] | net.ipv4.ip_local_port_range=* | net.ipv4.tcp_syn_retries=*) ;;
        *=*) printf 'sysctl: setting key "%s": Invalid argument\n' "${arg%%=*}" >&2; status=1 ;;
        net.core.somaxconn) printf '%s = 4096\n' "$arg" ;;
        net.ipv4.tcp_syncookies) printf '%s = 1\n' "$arg" ;;
        net.ipv4.ip_local_port_range) printf '%s = 20000\t60000\n' "$arg" ;;
        *) printf 'sysctl: cannot stat /proc/sys/%s: No such file or directory\n' "${arg//.//}" >&2; status=255 ;;
      esac
    done
    return "$status"
  }
}

@test "the effective sysctls are read with one process a side, in the order of their keys" {
  run netns_read_sysctls
  assert_success
  assert_output "$(printf '%s\t%s\t%s\n' client net.ipv4.ip_local_port_range '20000 60000' \
    client net.ipv4.tcp_syn_retries unavailable server net.core.somaxconn 4096 server net.ipv4.tcp_syncookies 1)"
  run cat "$CALLS"
  assert_line "server sysctl net.core.somaxconn net.ipv4.tcp_syncookies"
  assert_line "client sysctl net.ipv4.ip_local_port_range net.ipv4.tcp_syn_retries"
  assert_equal "${#lines[@]}" 2
}

@test "the cell's sysctls are written with one process a side" {
  # shellcheck disable=SC2034 # SC2034: read through a nameref (netns_apply_sysctls)
  local -A cell=([SOMAXCONN]=1024 [TCP_SYNCOOKIES]=0 [CLIENT_IP_LOCAL_PORT_RANGE]=30000-40000 [CLIENT_TCP_SYN_RETRIES]="" [RMEM_MAX]=1)
  cell_error ""
  netns_apply_sysctls cell
  assert_equal "$CELL_ERROR" ""
  run cat "$CALLS"
  assert_line --regexp "^server sysctl -q -w net\.(core\.somaxconn=1024 net\.ipv4\.tcp_syncookies=0|ipv4\.tcp_syncookies=0 net\.core\.somaxconn=1024)$"
  assert_line "client sysctl -q -w net.ipv4.ip_local_port_range=30000 40000"
  assert_equal "${#lines[@]}" 2
}

@test "a setting the kernel refuses is named" {
  # shellcheck disable=SC2034 # SC2034: read through a nameref (netns_apply_sysctls)
  local -A cell=([SOMAXCONN]=1024 [TCP_SYNCOOKIES]=many)
  cell_error ""
  run netns_apply_sysctls cell
  assert_failure
  netns_apply_sysctls cell || true
  assert_equal "$CELL_ERROR" "cannot set net.ipv4.tcp_syncookies=many in the server namespace"
}

@test "the suite's own ports lie just below the users' ephemeral range, else just above it" {
  run netns_ports_outside 32768 60999 64
  assert_output "32704 32767"
  run netns_ports_outside 60000 60999 64
  assert_output "59936 59999"
  # No room below: above.
  run netns_ports_outside 1 60999 64
  assert_output "61000 61063"
  run netns_ports_outside 1 65535 64
  assert_output ""
}

@test "the runner's requests from the client namespace bind a port outside its range; the server side's do not" {
  netns_exec() {
    [[ "$1 $2 $3 $4" == "client sysctl -n net.ipv4.ip_local_port_range" ]] || return 1
    printf '60000\t60999\n'
  }
  run netns_curl_ports client
  assert_output "$(printf '%s\n' --local-port 59488-59998)"
  run netns_curl_ports server
  assert_output ""
  # shellcheck disable=SC2034 # SC2034: read by netns.sh
  NETNS_HOST_MODE=1
  run netns_curl_ports client
  assert_output ""
}

@test "netns_up makes both namespaces, the veth pair and their addresses with three ip processes, and fails with ip" {
  # An ip of its own first in PATH: each start logged with its arguments and the commands it was given.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cat >"$BATS_TEST_TMPDIR/bin/ip" <<SH
#!/bin/bash
printf 'ip %s\n' "\$*" >>"$CALLS"
cat >>"$CALLS"
exit \${IP_EXIT:-0}
SH
  chmod +x "$BATS_TEST_TMPDIR/bin/ip"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run netns_up 198.18.0.1 "198.18.0.2 198.18.0.3"
  assert_success
  [ "$(grep -c '^ip ' "$CALLS")" -eq 3 ]
  run cat "$CALLS"
  assert_output "ip -batch -
netns add ltsuite-srv
netns add ltsuite-cli
link add ltsuite-s0 netns ltsuite-srv type veth peer name ltsuite-c0 netns ltsuite-cli
ip -n ltsuite-srv -batch -
addr add 198.18.0.1/24 dev ltsuite-s0
link set lo up
link set ltsuite-s0 up
ip -n ltsuite-cli -batch -
addr add 198.18.0.2/24 dev ltsuite-c0
addr add 198.18.0.3/24 dev ltsuite-c0
link set lo up
link set ltsuite-c0 up"
  # The container's namespace given the server's name (BACKEND=compose).
  : >"$CALLS"
  PATH="$BATS_TEST_TMPDIR/bin:$PATH" run netns_up 198.18.0.1 198.18.0.2 4242
  assert_success
  run cat "$CALLS"
  assert_line --index 1 "netns attach ltsuite-srv 4242"
  : >"$CALLS"
  IP_EXIT=1 PATH="$BATS_TEST_TMPDIR/bin:$PATH" run netns_up 198.18.0.1 198.18.0.2
  assert_failure
  # The first failed: nothing more asked of ip.
  [ "$(grep -c '^ip ' "$CALLS")" -eq 1 ]
}
