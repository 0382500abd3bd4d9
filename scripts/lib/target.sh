# shellcheck shell=bash
# Summary: start, check and stop the Spring Boot target inside the server namespace.

TARGET_JAR="${TARGET_JAR:-$LT_ROOT/server/target/loadtest-target.jar}"
TARGET_CDS_DIR="$LT_ROOT/server/target/cds"
TARGET_PID=""

# target_java_args MODE: how to start the JVM. "cds" uses the extracted jar
# and its class-data-sharing archive (scripts/setup/build-target-cds.sh)
# when they are newer than the jar; otherwise, or with "jar", the plain jar.
target_java_args() {
  local mode="$1"
  if [[ "$mode" == cds && -s "$TARGET_CDS_DIR/app.jsa" && "$TARGET_CDS_DIR/app.jsa" -nt "$TARGET_JAR" ]]; then
    # -Xshare:auto: a mismatched archive is ignored, never fatal.
    printf '%s\n' "-XX:SharedArchiveFile=$TARGET_CDS_DIR/app.jsa" -Xshare:auto \
      -jar "$TARGET_CDS_DIR/app/loadtest-target.jar"
  else
    printf '%s\n' -jar "$TARGET_JAR"
  fi
}

# target_start CELL_ASSOC LOG: start the target with the cell's settings, in
# the background; its pid goes to TARGET_PID. The target gets every knob of
# the cell in its environment (it reads TOMCAT_*, DELAY_MS, ports and the
# waiting-room settings) and nothing from the caller's environment. The
# ltsuite.run_id property marks the JVM as this suite's, for whoever looks.
target_start() {
  local -n cell_values="$1"
  local log="$2" key
  local -a java_args
  mapfile -t java_args < <(target_java_args "${cell_values[TARGET_START_MODE]:-jar}")
  local -a env_args=(
    "PATH=$PATH"
    "SERVER_ADDRESS=${cell_values[SERVER_ADDR]}"
    "MANAGEMENT_ADDRESS=127.0.0.1"
  )
  for key in "${!cell_values[@]}"; do
    env_args+=("$key=${cell_values[$key]}")
  done
  # A simple command (not a function) in the background, and ip netns exec
  # and env both exec: $! is the JVM itself.
  ip netns exec "$(netns_name server)" env -i "${env_args[@]}" \
    java "-Xmx${cell_values[SERVER_HEAP]}" -Djava.net.preferIPv4Stack=true "-Dltsuite.run_id=$LT_RUN_ID" \
    "${java_args[@]}" >"$log" 2>&1 &
  TARGET_PID=$!
}

# target_wait_healthy URL TIMEOUT_S: poll URL from the client namespace until
# it answers 200, the target dies, or TIMEOUT_S pass. On failure the reason
# is in CELL_ERROR.
target_wait_healthy() {
  local url="$1" timeout_s="$2" deadline
  deadline=$((SECONDS + timeout_s))
  while ((SECONDS < deadline)); do
    if ! target_alive; then
      CELL_ERROR="target exited during start-up"
      return 1
    fi
    if netns_exec client curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  CELL_ERROR="target did not answer $url within ${timeout_s}s"
  return 1
}

# target_alive: succeed while the target process runs.
target_alive() {
  [[ -n "$TARGET_PID" ]] && kill -0 "$TARGET_PID" 2>/dev/null
}

# target_stop: stop the target (SIGTERM, then SIGKILL after 10 s) and reap it.
target_stop() {
  [[ -n "$TARGET_PID" ]] || return 0
  stop_pid "$TARGET_PID" 10 || true
  wait "$TARGET_PID" 2>/dev/null || true
  TARGET_PID=""
}
