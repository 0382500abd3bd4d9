# shellcheck shell=bash
# Summary: once-a-second samples of queues, connection states and Tomcat threads.

SAMPLER_PID=""

readonly SAMPLES_HEADER=$'ts\tlisten_recvq\tlisten_sendq\tserver_estab\tserver_syn_recv\tserver_time_wait\tclient_estab\tclient_time_wait\ttomcat_threads_busy\ttomcat_connections'

# sampler_start FILE PORT MGMT_PORT INTERVAL_S MAX_SAMPLES: sample in the
# background until stopped or MAX_SAMPLES rows are written.
sampler_start() {
  local file="$1" port="$2" mgmt_port="$3" interval="$4" max_samples="$5"
  printf '%s\n' "$SAMPLES_HEADER" >"$file"
  (
    trap 'exit 0' TERM
    local i
    for ((i = 0; i < max_samples; i++)); do
      sampler_row "$port" "$mgmt_port" >>"$file"
      sleep "$interval"
    done
  ) &
  SAMPLER_PID=$!
}

# sampler_stop: stop the background sampler.
sampler_stop() {
  [[ -n "$SAMPLER_PID" ]] || return 0
  kill -TERM "$SAMPLER_PID" 2>/dev/null || true
  wait "$SAMPLER_PID" 2>/dev/null || true
  SAMPLER_PID=""
}

# sampler_row PORT MGMT_PORT: one tab-separated row (see SAMPLES_HEADER).
sampler_row() {
  local port="$1" mgmt_port="$2" ts busy conns
  ts="$(date +%s.%N)"
  busy="$(target_metric "$mgmt_port" tomcat.threads.busy)"
  conns="$(target_metric "$mgmt_port" tomcat.connections.current)"
  {
    netns_exec server ss -Htan 2>/dev/null | sed 's/^/server /'
    netns_exec client ss -Htan 2>/dev/null | sed 's/^/client /'
  } | sampler_format_row "$port" "$ts" "${busy%.0}" "${conns%.0}"
}

# sampler_format_row PORT TS BUSY CONNS: turn `ss -Htan` lines prefixed with
# "server " or "client " into one samples row. The listener's Recv-Q is the
# accept queue's length and its Send-Q the effective backlog. Connections
# count when either end is PORT; the listener's row is left empty if absent.
sampler_format_row() {
  awk -v port="$1" -v ts="$2" -v busy="$3" -v conns="$4" '
    function port_of(addr) { sub(/.*:/, "", addr); return addr }
    {
      side = $1; state = $2; local_port = port_of($5); peer_port = port_of($6)
      if (state == "LISTEN") {
        if (side == "server" && local_port == port) { recvq = $3; sendq = $4 }
        next
      }
      if (local_port != port && peer_port != port) next
      count[side, state]++
    }
    END {
      printf "%.3f\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", ts, recvq, sendq,
        count["server", "ESTAB"], count["server", "SYN-RECV"], count["server", "TIME-WAIT"],
        count["client", "ESTAB"], count["client", "TIME-WAIT"], busy, conns
    }
  '
}
