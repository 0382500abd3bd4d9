# shellcheck shell=bash
# Summary: once-a-second samples of queues, connection states and Tomcat threads.

# The running sampler: state of this file only, read by sampler_stop.
SAMPLER_PID=""
SAMPLER_PROGRAM="$(dirname "${BASH_SOURCE[0]}")/sampler.py"

# The columns of samples.tsv; lib/sampler.py writes its rows in this order.
readonly SAMPLES_HEADER=$'ts\tlisten_recvq\tlisten_sendq\tserver_estab\tserver_syn_recv\tserver_time_wait\tclient_estab\tclient_time_wait\ttomcat_threads_busy\ttomcat_connections\tk6_cpu_pct\tk6_rss_mb\tproxy_upstream_time_wait\tproxy_client_time_wait'

# sampler_start FILE PORT MGMT_PORT INTERVAL_S MAX_SAMPLES [HOOK [CLIENT_PORT [PROXY_PORT]]]:
# sample in the background until stopped or MAX_SAMPLES rows are written, at
# start + k x INTERVAL_S. HOOK, when given (may be empty), is run with each new
# row (tab-separated) as its argument as it is taken, e.g. to send it on at
# once; its failures are its own. The client's sockets are counted on
# CLIENT_PORT (default PORT): the port the users load, nginx's when it is in
# front. With PROXY_PORT (nginx in the server namespace, listening there) the
# server's TIME-WAIT is counted per end: the target's, nginx's towards it and
# nginx's towards the users. One process (lib/sampler.py) keeps the time and reads
# each namespace itself (setns, no process per namespace); sampler.json, next to
# FILE, gets its own CPU cost, and k6-cpu.tsv k6's, the target JVM's and the
# machine's CPU ticks every 50 ms. LT_SAMPLER=off (for measuring that cost) writes the header only.
sampler_start() {
  local file="$1" port="$2" mgmt_port="$3" interval="$4" max_samples="$5" hook="${6:-}" client_port="${7:-$2}"
  local proxy_port="${8:-}"
  printf '%s\n' "$SAMPLES_HEADER" >"$file"
  [[ "${LT_SAMPLER:-on}" != off ]] || return 0
  local -a args=(run --out "$file" --cost "$(dirname "$file")/sampler.json" --port "$port"
    --mgmt-port "$mgmt_port" --interval "$interval" --max "$max_samples" --k6-mark "LT_RUN_ID=$LT_RUN_ID"
    --client-port "$client_port" --proxy-port "$proxy_port" --k6-trace "$(dirname "$file")/k6-cpu.tsv"
    "--target-mark=-Dltsuite.run_id=$LT_RUN_ID")
  if [[ "$NETNS_HOST_MODE" == 1 ]]; then
    args+=(--client-host)
  else
    args+=(--server-ns "$(netns_name server)" --client-ns "$(netns_name client)")
  fi
  # A simple command in the background: $! is the sampler itself. It carries
  # the run's id (--k6-mark), and closes the run lock (run-matrix.sh
  # LT_LOCK_FD) before the hook's reader is started, so neither holds it.
  if [[ -n "$hook" ]]; then
    "$LT_PYTHON" "$SAMPLER_PROGRAM" "${args[@]}" 9>&- > >(sampler_each_row "$hook") &
  else
    "$LT_PYTHON" "$SAMPLER_PROGRAM" "${args[@]}" 9>&- >/dev/null &
  fi
  # shellcheck disable=SC2034 # SC2034: read by its name (end_child_in SAMPLER_PID in sampler_stop)
  SAMPLER_PID=$!
}

# sampler_each_row HOOK: run HOOK with each row read from stdin, as it comes.
sampler_each_row() {
  local hook="$1" row
  while IFS= read -r row; do
    "$hook" "$row" || true
  done
}

# sampler_stop: stop the background sampler (it ends at once on SIGTERM,
# mid-pause or mid-sample).
sampler_stop() {
  end_child_in SAMPLER_PID TERM 10
}
