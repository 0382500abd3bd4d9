#!/usr/bin/env bash
# Summary: measure the packet delayer (NET_RTT_MS) on this machine: the connect time it adds
# and the packets a second it holds without falling behind.
# Usage: scripts/netdelay-bench.sh   (NETDELAY_BENCH_RTTS="0 20 40"; NETDELAY_BENCH_RATES="10000 20000 40000 80000")
#
# Two namespaces of its own (ltsuite-nd-srv, ltsuite-nd-cli) on a veth pair in
# 198.18.254.0/24, the cell's rules and delayer in the client one (scripts/lib/netdelay.sh):
#   1. accuracy: for each RTT, 20 new connections with curl to a small HTTP
#      server in the server namespace; curl's connect time (median, min, max)
#      beside the RTT asked, and the delayer's own median hold doubled;
#   2. ceiling: at 20 ms, UDP datagrams at each rate for 2 s (bounded in count
#      and time); the rate the sender reached, the packets the kernel dropped
#      because the delayer fell behind, and the delayer's hold p50/p99.
# Prints a Markdown table a section each. Needs root, iptables, curl, python3.
set -euo pipefail
LT_PROG=netdelay-bench
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

readonly ND_SRV=ltsuite-nd-srv ND_CLI=ltsuite-nd-cli ND_SRV_ADDR=198.18.254.1 ND_CLI_ADDR=198.18.254.2
readonly ND_QUEUE=31 ND_PORT=18099
ND_TMP=""
ND_HTTP_PID=""
ND_DELAYER_PID=""
# 1 once this bench made its namespaces: only then does it remove them.
ND_MADE=0

# nd_up: the two namespaces, linked, with a small HTTP server in the server one.
nd_up() {
  ND_MADE=1
  ip netns add "$ND_SRV"
  ip netns add "$ND_CLI"
  ip link add ltsuite-nds0 netns "$ND_SRV" type veth peer name ltsuite-ndc0 netns "$ND_CLI"
  ip -n "$ND_SRV" addr add "$ND_SRV_ADDR/24" dev ltsuite-nds0
  ip -n "$ND_CLI" addr add "$ND_CLI_ADDR/24" dev ltsuite-ndc0
  ip -n "$ND_SRV" link set ltsuite-nds0 up
  ip -n "$ND_CLI" link set ltsuite-ndc0 up
  ip -n "$ND_SRV" link set lo up
  ip -n "$ND_CLI" link set lo up
  (cd "$ND_TMP" && exec ip netns exec "$ND_SRV" "$LT_PYTHON" -m http.server -b "$ND_SRV_ADDR" "$ND_PORT" \
    >/dev/null 2>&1) &
  ND_HTTP_PID=$!
}

# nd_down: what nd_up and nd_delayer started, by pid, then the namespaces.
nd_down() {
  nd_delayer_stop
  if [[ -n "$ND_HTTP_PID" ]]; then
    end_child "$ND_HTTP_PID" TERM 10 || true
  fi
  if [[ "$ND_MADE" == 1 ]]; then
    ip netns del "$ND_SRV" 2>/dev/null || true
    ip netns del "$ND_CLI" 2>/dev/null || true
  fi
  [[ -z "$ND_TMP" ]] || rm -rf "$ND_TMP"
}

# nd_rules -A|-D: add or delete the cell's two rules in the client namespace.
nd_rules() {
  ip netns exec "$ND_CLI" iptables -w "$1" OUTPUT -d "$ND_SRV_ADDR/24" -j NFQUEUE --queue-num "$ND_QUEUE"
  ip netns exec "$ND_CLI" iptables -w "$1" INPUT -s "$ND_SRV_ADDR/24" -j NFQUEUE --queue-num "$ND_QUEUE"
}

# nd_delayer RTT STATS: the rules and the delayer at RTT ms, ready before it returns.
nd_delayer() {
  local ready=""
  nd_rules -A
  coproc ND_IO { NET_RTT_MS="$1" PYTHONPATH="$LT_ROOT/scripts" exec ip netns exec "$ND_CLI" \
    "$LT_PYTHON" -S -m ltsuite.netdelay "$ND_QUEUE" "$2"; }
  ND_DELAYER_PID="$ND_IO_PID"
  ready="$(timeout 10 head -n 1 <&"${ND_IO[0]}" 2>/dev/null)" || true
  [[ "$ready" == ready ]] || abort "the delayer did not start"
}

# nd_delayer_stop: stop the delayer; it writes its stats.
nd_delayer_stop() {
  [[ -n "$ND_DELAYER_PID" ]] || return 0
  end_child "$ND_DELAYER_PID" TERM 10 || true
  ND_DELAYER_PID=""
  nd_rules -D
}

# nd_connects N: curl's connect times (ms) of N new connections, one a line.
nd_connects() {
  local i
  for ((i = 0; i < $1; i++)); do
    ip netns exec "$ND_CLI" curl -sf -o /dev/null --max-time 5 -w '%{time_connect}\n' \
      "http://$ND_SRV_ADDR:$ND_PORT/" | awk '{ printf "%.2f\n", $1 * 1000 }' || abort "curl to the bench's server failed"
  done
}

# nd_accuracy RTT: one row of the accuracy table.
nd_accuracy() {
  local rtt="$1" stats="$ND_TMP/acc-$1.json" times applied="-"
  [[ "$rtt" == 0 ]] || nd_delayer "$rtt" "$stats"
  times="$(nd_connects 20 | sort -n)"
  nd_delayer_stop
  [[ ! -s "$stats" ]] || applied="$(jq -r '.rtt_applied_ms' "$stats")"
  printf '| %s | %s | %s | %s | %s |\n' "$rtt" \
    "$(awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' <<<"$times")" \
    "$(head -n 1 <<<"$times")" "$(tail -n 1 <<<"$times")" "$applied"
}

# nd_ceiling RATE: one row of the ceiling table (20 ms RTT, 2 s of datagrams from two
# senders at RATE/2 each: one Python sender reaches about 19,000 a second here).
nd_ceiling() {
  local rate="$1" stats="$ND_TMP/rate-$1.json" half=$(($1 / 2)) i
  local -a senders=()
  nd_delayer 20 "$stats"
  for i in 1 2; do
    ip netns exec "$ND_CLI" env PYTHONPATH="$LT_ROOT/scripts" "$LT_PYTHON" -S -m ltsuite.netdelay send \
      "$ND_SRV_ADDR" 9 "$half" "$((half * 2))" >"$ND_TMP/sent-$rate-$i" &
    senders+=("$!")
  done
  wait "${senders[@]}"
  nd_delayer_stop
  printf '| %s | %s | %s |\n' "$rate" "$(cut -f 2 "$ND_TMP/sent-$rate-"* | awk '{ s += $1 } END { print s }')" \
    "$(jq -r '"\(.held) | \(.kernel_queue_dropped + .kernel_user_dropped) | \(.hold_p50_ms) | \(.hold_p99_ms) | \(.cpu_s) | \(if .cpu_s > 0 then (.held / .cpu_s | floor) else "-" end)"' "$stats")"
}

main() {
  "$LT_ROOT/scripts/setup/require.sh" root
  command -v iptables >/dev/null || abort "iptables is missing (scripts/setup/install-packages.sh installs it)"
  ND_TMP="$(mktemp -d)"
  trap nd_down EXIT
  trap 'exit 130' INT TERM
  nd_down_leftover
  nd_up
  sleep 1
  local rtt rate
  printf '## Delay accuracy (curl, 20 new connections each)\n\n'
  printf '| NET_RTT_MS | connect median ms | min | max | delayer: RTT applied ms |\n|---|---|---|---|---|\n'
  for rtt in ${NETDELAY_BENCH_RTTS:-0 20 40}; do
    nd_accuracy "$rtt"
  done
  printf '\n## Packets a second held at NET_RTT_MS=20 (2 s of one-byte UDP datagrams each)\n\n'
  printf '| asked /s | sent /s | held | kernel drops | hold p50 ms | hold p99 ms | delayer CPU s | held per CPU s |\n'
  printf '|---|---|---|---|---|---|---|---|\n'
  for rate in ${NETDELAY_BENCH_RATES:-10000 20000 40000 80000}; do
    nd_ceiling "$rate"
  done
}

# nd_down_leftover: refuse to start over namespaces of the same name (another bench, or one
# that was killed): they are removed only when this bench made them.
nd_down_leftover() {
  if [[ -e "/run/netns/$ND_SRV" || -e "/run/netns/$ND_CLI" ]]; then
    abort "namespaces $ND_SRV/$ND_CLI exist: another netdelay bench runs, or one was killed (ip netns del them)"
  fi
}

main "$@"
