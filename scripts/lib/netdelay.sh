# shellcheck shell=bash
# Summary: the delayer of a cell: round-trip time, jitter and loss between the
# users' namespace and the service (NET_RTT_MS, NET_JITTER_MS, NET_LOSS).
#
# Two iptables rules in the client namespace (OUTPUT to the server's subnet,
# INPUT from it) hand every packet to NFQUEUE queue NETDELAY_QUEUE; the
# delayer (ltsuite.netdelay, in the same namespace) holds each half the RTT
# and accepts it. No --queue-bypass: a delayer that died drops the packets
# instead of letting them through undelayed, so a cell is never silently
# faster. The rules live and die with the client namespace; the host's
# tables are never touched. Needs common.sh and netns.sh.

readonly NETDELAY_QUEUE=31
# The running delayer: state of this file only, read by netdelay_stop.
NETDELAY_PID=""

# netdelay_knob_problems ORIGIN_ASSOC VALUE_ASSOC: "WHERE: KEY: why" when
# some cell would have a jitter above half its round trip (each way's hold
# varies by up to half the jitter around half the RTT, so it would go below
# 0), naming where both were set; every pair of their values is a cell. The
# knobs' own ranges are their types' (env/defaults.env), checked as the
# matrix is read; ltsuite.netdelay.validate checks each cell again.
netdelay_knob_problems() {
  local -n nk_origin="$1" nk_value="$2"
  local jitter rtt
  local -a jitters rtts
  read -r -a jitters <<<"${nk_value[NET_JITTER_MS]:-0}"
  read -r -a rtts <<<"${nk_value[NET_RTT_MS]:-0}"
  for jitter in "${jitters[@]}"; do
    for rtt in "${rtts[@]}"; do
      if ((10#$jitter * 2 > 10#$rtt)); then
        printf '%s: NET_JITTER_MS: %s is more than half NET_RTT_MS=%s (%s): a hold would go below 0\n' \
          "${nk_origin[NET_JITTER_MS]:-defaults}" "$jitter" "$rtt" "${nk_origin[NET_RTT_MS]:-defaults}"
        return 0
      fi
    done
  done
}

# netdelay_wanted CELL_ASSOC: succeed when the cell asks for a delay, jitter or loss.
netdelay_wanted() {
  local -n nd_values="$1"
  # Both are whole numbers (type uint); the loss is a rate, checked by ltsuite.netdelay.
  ((10#${nd_values[NET_RTT_MS]:-0} > 0 || 10#${nd_values[NET_JITTER_MS]:-0} > 0)) && return 0
  [[ ! "${nd_values[NET_LOSS]:-0}" =~ ^0*\.?0*$ ]]
}

# netdelay_start CELL_ASSOC CELL_DIR: when the cell asks for it, the rules
# and the delayer in the client namespace, ready before it returns; its
# stats go to CELL_DIR/netdelay.json when it stops. On failure the reason is
# in CELL_ERROR.
netdelay_start() {
  local -n ns_values="$1"
  local cell_dir="$2" subnet ready=""
  netdelay_wanted "$1" || return 0
  if [[ "$NETNS_HOST_MODE" == 1 ]]; then
    cell_error "NET_RTT_MS, NET_JITTER_MS and NET_LOSS need the client namespace (not an external TARGET_URL)"
    return 1
  fi
  subnet="${ns_values[SERVER_ADDR]%.*}.0/24"
  if ! netns_exec client iptables -w -A OUTPUT -d "$subnet" -j NFQUEUE --queue-num "$NETDELAY_QUEUE" \
    || ! netns_exec client iptables -w -A INPUT -s "$subnet" -j NFQUEUE --queue-num "$NETDELAY_QUEUE"; then
    cell_error "cannot add the delayer's NFQUEUE rules in the client namespace (is iptables installed?)"
    return 1
  fi
  # A simple command in the background, so $! is the delayer itself; it
  # says "ready" once bound to its queue. The run lock (fd 9) stays with the runner.
  coproc NETDELAY_IO { NET_RTT_MS="${ns_values[NET_RTT_MS]:-0}" NET_JITTER_MS="${ns_values[NET_JITTER_MS]:-0}" \
    NET_LOSS="${ns_values[NET_LOSS]:-0}" PYTHONPATH="$LT_ROOT/scripts" \
    exec ip netns exec "$(netns_name client)" "$LT_PYTHON" -S -m ltsuite.netdelay \
    "$NETDELAY_QUEUE" "$cell_dir/netdelay.json" 9>&- 2>>"$cell_dir/netdelay.log"; }
  NETDELAY_PID="$NETDELAY_IO_PID"
  # Its first line, waited for by a process of its own (not bash's read -t:
  # a SIGALRM and a longjmp that a Ctrl-C meanwhile leaves armed in the exit trap).
  ready="$(timeout 10 head -n 1 <&"${NETDELAY_IO[0]}" 2>/dev/null)" || true
  if [[ "$ready" != ready ]]; then
    cell_error "the delayer did not start ($(tail -n 1 "$cell_dir/netdelay.log" 2>/dev/null))"
    return 1
  fi
}

# netdelay_restart CELL_DIR: the delayer counts from now on (SIGUSR1,
# answered with "restarted" once done), so the cell's warm-up is in none of
# the row's net_* figures; nothing without a delayer. On failure the reason
# is in CELL_ERROR.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
netdelay_restart() {
  local cell_dir="$1" said=""
  [[ -n "$NETDELAY_PID" ]] || return 0
  kill -USR1 "$NETDELAY_PID" 2>/dev/null || true
  said="$(timeout 5 head -n 1 <&"${NETDELAY_IO[0]}" 2>/dev/null)" || true
  [[ "$said" == restarted ]] && return 0
  cell_error "the delayer did not start its count again after the warm-up ($(tail -n 1 "$cell_dir/netdelay.log" 2>/dev/null))"
  return 1
}

# netdelay_alive: succeed when no delayer was started, or it still runs.
netdelay_alive() {
  [[ -z "$NETDELAY_PID" ]] || kill -0 "$NETDELAY_PID" 2>/dev/null
}

# netdelay_stop: stop the delayer (it releases what it holds and writes its
# stats on SIGTERM). The rules go with the client namespace.
netdelay_stop() {
  end_child_in NETDELAY_PID TERM 10
}
