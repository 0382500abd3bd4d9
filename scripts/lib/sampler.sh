# shellcheck shell=bash
# Summary: once-a-second samples of queues, connection states and Tomcat threads.

SAMPLER_PID=""
# A command run with each new samples row (tab-separated) as its argument,
# e.g. to send it on at once; empty for none. Its failures are its own.
SAMPLER_ROW_HOOK=""

readonly SAMPLES_HEADER=$'ts\tlisten_recvq\tlisten_sendq\tserver_estab\tserver_syn_recv\tserver_time_wait\tclient_estab\tclient_time_wait\ttomcat_threads_busy\ttomcat_connections\tk6_cpu_pct\tk6_rss_mb'

# sampler_start FILE PORT MGMT_PORT INTERVAL_S MAX_SAMPLES: sample in the
# background until stopped or MAX_SAMPLES rows are written.
sampler_start() {
  local file="$1" port="$2" mgmt_port="$3" interval="$4" max_samples="$5"
  printf '%s\n' "$SAMPLES_HEADER" >"$file"
  (
    # The pause is a child waited for, so a stop ends it at once instead of
    # after the rest of the interval.
    local pause_pid=""
    trap 'if [[ -n "$pause_pid" ]]; then kill "$pause_pid" 2>/dev/null || true; fi; exit 0' TERM
    local i k6_pid="" usage ticks rss now prev_ticks="" prev_now="" cpu row
    for ((i = 0; i < max_samples; i++)); do
      [[ -n "$k6_pid" && -d "/proc/$k6_pid" ]] || k6_pid="$(sampler_k6_pid)"
      usage="$(sampler_proc_usage "$k6_pid")"
      now="$(date +%s.%N)"
      ticks="${usage%% *}"
      rss="${usage#* }"
      cpu=""
      if [[ -n "$ticks" && -n "$prev_ticks" ]]; then
        cpu="$(awk -v t="$ticks" -v pt="$prev_ticks" -v n="$now" -v pn="$prev_now" -v hz="$(getconf CLK_TCK)" \
          'BEGIN { if (n > pn) printf "%.1f", (t - pt) / hz / (n - pn) * 100 }')"
      fi
      prev_ticks="$ticks"
      prev_now="$now"
      row="$(sampler_row "$port" "$mgmt_port" "$cpu" "$rss")"
      printf '%s\n' "$row" >>"$file"
      if [[ -n "$SAMPLER_ROW_HOOK" ]]; then "$SAMPLER_ROW_HOOK" "$row" || true; fi
      sleep "$interval" &
      pause_pid=$!
      wait "$pause_pid" || true
      pause_pid=""
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
# A command run with each new samples row (tab-separated) as its argument,
# e.g. to send it on at once; empty for none. Its failures are its own.
SAMPLER_ROW_HOOK=""
}

# sampler_k6_pid: the pid of this run's k6 (marked with -e LT_RUN_ID=), if any.
sampler_k6_pid() {
  local pid
  for pid in $(pgrep -x k6); do
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "LT_RUN_ID=$LT_RUN_ID "; then
      printf '%s\n' "$pid"
      return
    fi
  done
}

# sampler_proc_usage PID: "cpu_ticks rss_mb" of a process (utime + stime in
# clock ticks; resident memory in MB), or " " if it is gone.
sampler_proc_usage() {
  local pid="$1"
  if [[ -z "$pid" || ! -r "/proc/$pid/stat" ]]; then
    printf ' \n'
    return
  fi
  awk 'FNR == NR { sub(/.*\) /, ""); ticks = $12 + $13; next }
       $1 == "VmRSS:" { rss = $2 / 1024 }
       END { printf "%d %.0f\n", ticks, rss }' "/proc/$pid/stat" "/proc/$pid/status" 2>/dev/null || printf ' \n'
}

# sampler_row PORT MGMT_PORT K6_CPU_PCT K6_RSS_MB: one tab-separated row (see
# SAMPLES_HEADER).
sampler_row() {
  local port="$1" mgmt_port="$2" k6_cpu="$3" k6_rss="$4" ts busy conns
  ts="$(date +%s.%N)"
  { read -r busy || true; read -r conns || true; } < <(target_metrics "$mgmt_port" tomcat.threads.busy tomcat.connections.current)
  {
    netns_exec server ss -Htan 2>/dev/null | sed 's/^/server /'
    netns_exec client ss -Htan 2>/dev/null | sed 's/^/client /'
  } | sampler_format_row "$port" "$ts" "${busy%.0}" "${conns%.0}" "$k6_cpu" "$k6_rss"
}

# sampler_format_row PORT TS BUSY CONNS [K6_CPU K6_RSS]: turn `ss -Htan` lines prefixed with
# "server " or "client " into one samples row. The listener's Recv-Q is the
# accept queue's length and its Send-Q the effective backlog. Connections
# count when either end is PORT; the listener's row is left empty if absent.
sampler_format_row() {
  awk -v port="$1" -v ts="$2" -v busy="$3" -v conns="$4" -v k6_cpu="${5:-}" -v k6_rss="${6:-}" '
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
      printf "%.3f\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", ts, recvq, sendq,
        count["server", "ESTAB"], count["server", "SYN-RECV"], count["server", "TIME-WAIT"],
        count["client", "ESTAB"], count["client", "TIME-WAIT"], busy, conns, k6_cpu, k6_rss
    }
  '
}
