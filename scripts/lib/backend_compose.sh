# shellcheck shell=bash
# Summary: the compose backend: the target in a container per cell, linked to the client namespace.
#
# Each cell writes its own compose file (CELL_DIR/compose.yml: the image, the
# cell's environment, its server-side sysctls, no network) and the compose
# client (the docker compose plugin or Debian's docker-compose) recreates the
# target service from it. The engine sets the sysctls in the container's own
# network namespace. That namespace is then attached under the server
# namespace's name and joined to the suite's client namespace by the usual
# veth pair, so the target answers at SERVER_ADDR:SERVER_PORT and everything
# else (k6 and the client-side samples in the client namespace; ss, nstat,
# sysctl and the actuator in the server one) runs exactly as with the netns
# backend.
#
# Needs common.sh, compose.sh, netns.sh, target.sh
# (target_wait_healthy, target_spring_env, target_app_env,
# target_check_connector), counters.sh, results.sh (write_atomic) and
# manifest.sh.

readonly COMPOSE_CONTAINER="ltsuite-target"
# The compose project of the target; the monitoring stack is another one.
readonly COMPOSE_TARGET_PROJECT="ltsuite-cell"
# Set while a container of this run may exist; its log goes to COMPOSE_TARGET_LOG.
COMPOSE_TARGET_CREATED=0
COMPOSE_TARGET_LOG=""
# The JVM's pid as the host sees it, while the container runs.
COMPOSE_TARGET_PID=""
# The engine, image and Java version go into the manifest once per run.
COMPOSE_RUN_RECORDED=0

# compose_require_runtime IMAGES JARS: root, the tools, a Docker engine
# (started by scripts/setup/install-docker.sh when none answers), every image
# in IMAGES and one for every jar of one's own in JARS (both space-separated,
# as axes are; scripts/setup/build-images.sh builds the default image and the
# jars' or brings them up to date; other images must exist).
compose_require_runtime() {
  local images="$1" jars="$2" image jar tool default_image="${KNOB_DEFAULT[TARGET_IMAGE]}"
  if [[ "$NETNS_HOST_MODE" == 1 ]]; then
    usage_error "BACKEND=compose starts its own target; to load an external TARGET_URL, leave BACKEND at netns"
  fi
  [[ $EUID -eq 0 ]] || abort "the compose backend needs root (the client network namespace and the link to the container); run as root"
  for tool in ip nstat ss curl jq sha256sum flock timeout; do
    command -v "$tool" >/dev/null || abort "$tool not found; run 'make tools' (or install it: apt-get install iproute2 curl jq)"
  done
  [[ -x "$LT_K6" ]] || abort "k6 not found at $LT_K6; run 'make tools'"
  "$LT_ROOT/scripts/setup/install-docker.sh" start || abort "no Docker engine for BACKEND=compose (see above)"
  compose_find || "$LT_ROOT/scripts/setup/install-compose.sh" || abort "no compose client for BACKEND=compose (see above)"
  compose_find || abort "no compose client for BACKEND=compose; install the docker compose plugin or docker-compose"
  if [[ -z "$jars" ]]; then
    for image in $images; do
      if [[ "$image" == "$default_image" ]]; then
        TARGET_IMAGE="$image" "$LT_ROOT/scripts/setup/build-images.sh" || abort "cannot build $image (see above)"
      elif ! docker image inspect "$image" >/dev/null 2>&1; then
        abort "image $image not found in the Docker engine; build it (TARGET_IMAGE=$image scripts/setup/build-images.sh) or load it"
      fi
    done
  fi
  for jar in $jars; do
    "$LT_ROOT/scripts/setup/build-images.sh" --jar "$jar" || abort "cannot build the image of $jar (see above)"
  done
}

# compose_cell_image CELL_ASSOC: the image the cell's container is made from:
# the one built for its TARGET_JAR, else TARGET_IMAGE.
compose_cell_image() {
  local -n image_values="$1"
  if [[ -n "${image_values[TARGET_JAR]:-}" ]]; then
    compose_jar_image "${image_values[TARGET_JAR]}"
  else
    printf '%s\n' "${image_values[TARGET_IMAGE]}"
  fi
}

# compose_remove_stale: a target container left by a run that was killed.
compose_remove_stale() {
  if docker container inspect "$COMPOSE_CONTAINER" >/dev/null 2>&1; then
    warn "removing container $COMPOSE_CONTAINER left by an earlier run that did not finish"
    docker rm --force "$COMPOSE_CONTAINER" >/dev/null 2>&1 || true
  fi
}

# compose_cell_start CELL_ASSOC CELL_DIR BASE_URL: the compose half of a
# cell's start: container, namespaces, client sysctls, effective sysctls,
# health (target_health_probe). On failure the reason
# is in CELL_ERROR.
compose_cell_start() {
  local -n start_values="$1"
  local cell_dir="$2" base_url="$3" side url status output_tail
  netns_down
  compose_target_start start_values "$cell_dir" || return 1
  # Every address k6 binds to (CLIENT_ADDRESSES, k6_command's --local-ips)
  # must be the client namespace's own.
  local client_addrs
  client_addrs="$(netns_client_addresses "${start_values[CLIENT_ADDR]}" "${start_values[CLIENT_ADDRESSES]}")" \
    || { cell_error "CLIENT_ADDRESSES: ${start_values[CLIENT_ADDRESSES]} addresses from ${start_values[CLIENT_ADDR]} leave its /24"; return 1; }
  netns_up "${start_values[SERVER_ADDR]}" "$client_addrs" "$COMPOSE_TARGET_PID" \
    || { cell_error "cannot link the container's network namespace to the client namespace"; return 1; }
  compose_apply_client_sysctls start_values || return 1
  netns_read_sysctls | write_atomic "$cell_dir/sysctls.tsv"
  read -r side url < <(target_health_probe start_values "$base_url")
  if ! target_wait_healthy "$url" "${start_values[TARGET_START_TIMEOUT]}" compose_target_alive \
    "" "$side" "$(target_health_hint start_values)"; then
    compose_save_log
    output_tail="$(target_log_tail "$COMPOSE_TARGET_LOG")"
    if ! compose_target_alive; then
      status="$(docker inspect --format '{{.State.ExitCode}}' "$COMPOSE_CONTAINER" 2>/dev/null)" || status="unknown"
      cell_error "$CELL_ERROR"": exit status $status; ${output_tail:-it wrote nothing}"
    elif [[ "$CELL_ERROR" == "target did not answer"* ]]; then
      cell_error "$CELL_ERROR""${output_tail:+; $output_tail}"
    fi
    return 1
  fi
  compose_record_run start_values
  # The effective connector settings against the cell's, where the app shows them.
  target_check_connector start_values | write_atomic "$cell_dir/connector.json" || true
}

# compose_target_start CELL_ASSOC CELL_DIR: write the cell's compose file and
# recreate the target service from it (detached); COMPOSE_TARGET_PID becomes
# the JVM's pid as the host sees it. The
# container's description is kept as CELL_DIR/container.json.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
compose_target_start() {
  local -n run_values="$1"
  local cell_dir="$2"
  compose_cell_file run_values "$cell_dir" | write_atomic "$cell_dir/compose.yml"
  COMPOSE_TARGET_LOG="$cell_dir/target.log"
  COMPOSE_TARGET_CREATED=1
  if ! "${COMPOSE[@]}" -p "$COMPOSE_TARGET_PROJECT" -f "$cell_dir/compose.yml" \
    up --detach --force-recreate --no-build >"$COMPOSE_TARGET_LOG" 2>&1 9>&-; then # 9>&-: not the run lock
    cell_error "${COMPOSE[*]} up failed: $(tail -n 1 "$COMPOSE_TARGET_LOG" | cut -c1-200)"
    return 1
  fi
  docker inspect "$COMPOSE_CONTAINER" >"$cell_dir/container.json" 2>/dev/null || true
  COMPOSE_TARGET_PID="$(docker inspect --format '{{.State.Pid}}' "$COMPOSE_CONTAINER" 2>/dev/null || true)"
  if [[ ! "$COMPOSE_TARGET_PID" =~ ^[1-9][0-9]*$ ]]; then
    COMPOSE_TARGET_PID=""
    compose_save_log
    cell_error "container $COMPOSE_CONTAINER exited at once: $(tail -n 1 "$COMPOSE_TARGET_LOG" | cut -c1-200)"
    return 1
  fi
}

# compose_cell_file CELL_ASSOC CELL_DIR: the cell's compose file: the target
# with no network, the cell's connector in its environment, its server-side
# sysctls and the runner's open-file limits. As with the netns backend
# (target_start), the suite's own target also gets every knob of the cell; a
# jar of one's own (TARGET_JAR) or another image gets Spring Boot's
# properties, TARGET_ENV_FILE, TARGET_JAVA_OPTS (in JDK_JAVA_OPTIONS) and
# TARGET_ARGS (as the command). Every value is a quoted string with "$"
# doubled, so compose takes it literally.
compose_cell_file() {
  local -n file_values="$1"
  local cell_dir="$2" soft hard name value image word line
  local -a args
  soft="$(ulimit -Sn)"
  hard="$(ulimit -Hn)"
  image="$(compose_cell_image file_values)"
  printf '# Cell %s of run %s: the target as BACKEND=compose started it.\n' "$(basename "$cell_dir")" "$LT_RUN_ID"
  printf '# It has no network: the runner joins its network namespace to the\n'
  printf '# client namespace (docs/backends.md). By hand:\n'
  printf '#   docker-compose -p %s -f compose.yml up -d\n' "$COMPOSE_TARGET_PROJECT"
  printf 'services:\n  target:\n'
  printf '    image: %s\n' "$(compose_quote "$image")"
  printf '    container_name: %s\n    network_mode: none\n' "$COMPOSE_CONTAINER"
  printf '    labels:\n      ltsuite.run_id: %s\n      ltsuite.cell: %s\n' \
    "$(compose_quote "$LT_RUN_ID")" "$(compose_quote "$(basename "$cell_dir")")"
  if [[ "$soft" =~ ^[0-9]+$ && "$hard" =~ ^[0-9]+$ ]]; then
    printf '    ulimits:\n      nofile:\n        soft: %s\n        hard: %s\n' "$soft" "$hard"
  fi
  # No server sysctl set: no key at all (compose refuses an empty "sysctls:").
  local -a sysctl_lines
  mapfile -t sysctl_lines < <(compose_server_sysctls file_values)
  [[ ${#sysctl_lines[@]} -eq 0 ]] || printf '    sysctls:\n'
  for line in "${sysctl_lines[@]}"; do
    read -r name value <<<"$line"
    printf '      %s: %s\n' "$name" "$(compose_quote "$value")"
  done
  read -r -a args <<<"${file_values[TARGET_ARGS]:-}"
  if [[ ${#args[@]} -gt 0 ]]; then
    printf '    command:\n'
    for word in "${args[@]}"; do
      printf '      - %s\n' "$(compose_quote "$word")"
    done
  fi
  printf '    environment:\n'
  local name_value
  while IFS= read -r name_value; do
    printf '      %s: %s\n' "${name_value%%=*}" "$(compose_quote "${name_value#*=}")"
  done < <(compose_cell_env file_values "$image")
}

# compose_cell_env CELL_ASSOC IMAGE: the container's environment, "NAME=value"
# a line, each name once. In target_start's order, the last of a name
# winning as with env(1): the suite's own image's knobs, then
# TARGET_ENV_FILE, then the connector as Spring Boot's own properties.
# Tomcat binds the wildcard: SERVER_ADDR appears only once the veth is in,
# after the JVM has started, and the container has no other address.
compose_cell_env() {
  local -n env_values="$1"
  local image="$2" key name_value
  local -A value_of=()
  local -a names=()
  while IFS= read -r name_value; do
    key="${name_value%%=*}"
    [[ -n "${value_of[$key]+set}" ]] || names+=("$key")
    value_of[$key]="${name_value#*=}"
  done < <(
    if [[ "$image" == "${KNOB_DEFAULT[TARGET_IMAGE]}" ]]; then
      printf 'MANAGEMENT_ADDRESS=127.0.0.1\n'
      for key in $(printf '%s\n' "${!env_values[@]}" | sort); do
        printf '%s=%s\n' "$key" "${env_values[$key]}"
      done
    fi
    target_app_env env_values
    target_spring_env env_values 0.0.0.0 "$COMPOSE_ACCESS_LOG_DIR"
    printf 'JDK_JAVA_OPTIONS=%s\n' "-Xmx${env_values[SERVER_HEAP]} -Dltsuite.run_id=$LT_RUN_ID${env_values[TARGET_JAVA_OPTS]:+ ${env_values[TARGET_JAVA_OPTS]}}"
  )
  for key in "${names[@]}"; do
    printf '%s=%s\n' "$key" "${value_of[$key]}"
  done
}

# compose_quote VALUE: VALUE as a YAML double-quoted string, "$" doubled
# (compose's escape for a literal dollar).
compose_quote() {
  local value="$1"
  value="${value//\\/\\\\}"
  value="${value//\"/\\\"}"
  value="${value//\$/\$\$}"
  printf '"%s"' "$value"
}

# compose_server_sysctls CELL_ASSOC: "name value" lines for every non-empty
# server-side sysctl of the cell.
compose_server_sysctls() {
  local -n sysctl_values="$1"
  local key value
  for key in $(printf '%s\n' "${!SYSCTL_SIDE[@]}" | sort); do
    [[ "${SYSCTL_SIDE[$key]}" == server ]] || continue
    value="${sysctl_values[$key]:-}"
    [[ -n "$value" ]] || continue
    [[ "$key" == *PORT_RANGE ]] && value="${value/-/ }"
    printf '%s %s\n' "${SYSCTL_NAME[$key]}" "$value"
  done
}

# compose_apply_client_sysctls CELL_ASSOC: the cell's client-side sysctls in
# the client namespace. The server-side ones were set by the engine when it
# made the container, so they are blanked here rather than written twice.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
compose_apply_client_sysctls() {
  local -n all_values="$1"
  local -A client_values=()
  local key
  for key in "${!all_values[@]}"; do
    client_values[$key]="${all_values[$key]}"
  done
  for key in "${!SYSCTL_SIDE[@]}"; do
    [[ "${SYSCTL_SIDE[$key]}" == server ]] && client_values[$key]=""
  done
  netns_apply_sysctls client_values
}

# compose_record_run CELL_ASSOC: once per run, what ran the target: the
# engine, the image and the Java inside it (the host's Java, which the
# manifest names by default, is not the one under load).
# shellcheck disable=SC2016,SC2034 # SC2016: jq and awk programs are in single quotes on purpose: their $names are theirs; SC2034: record_values is read through a nameref by compose_cell_image
compose_record_run() {
  local -n record_values="$1"
  ((COMPOSE_RUN_RECORDED)) && return 0
  COMPOSE_RUN_RECORDED=1
  local image java engine client
  image="$(compose_cell_image record_values)"
  # The first line with " version ": the launcher first notes JDK_JAVA_OPTIONS.
  java="$(docker exec "$COMPOSE_CONTAINER" java -version 2>&1 | awk '/ version / && !found { print; found = 1 }')" \
    || java="unknown"
  engine="$(docker version --format '{{.Server.Version}}' 2>/dev/null)" || engine="unknown"
  # Read whole: cutting the pipe after one line can fail the client (EPIPE).
  client="$("${COMPOSE[@]}" version 2>/dev/null)" || client="unknown"
  client="${client%%$'\n'*}"
  say "target: service target of compose project $COMPOSE_TARGET_PROJECT (${client:-${COMPOSE[*]}}), container $COMPOSE_CONTAINER from $image (Docker $engine), its network namespace attached as $(netns_name server)"
  manifest_update "$LT_RUN_DIR" '.versions.java = $java
      | .compose = {client: $client, project: $project, engine: $engine, storage_driver: $driver,
          image: $image, image_id: $id, container: $name}' \
    --arg client "${client:-${COMPOSE[*]}}" --arg project "$COMPOSE_TARGET_PROJECT" \
    --arg java "$java" --arg engine "$engine" --arg image "$image" --arg name "$COMPOSE_CONTAINER" \
    --arg driver "$(docker info --format '{{.Driver}}' 2>/dev/null || echo unknown)" \
    --arg id "$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || echo unknown)"
}

# compose_save_log: the container's output so far into the cell's
# target.log; without a container the file keeps what docker run said.
compose_save_log() {
  [[ -n "$COMPOSE_TARGET_LOG" ]] || return 0
  if docker logs "$COMPOSE_CONTAINER" >"$COMPOSE_TARGET_LOG.tmp" 2>&1; then
    mv -f "$COMPOSE_TARGET_LOG.tmp" "$COMPOSE_TARGET_LOG"
  else
    rm -f "$COMPOSE_TARGET_LOG.tmp"
  fi
}

# Where the container's Tomcat writes its access log (target_accesslog_env):
# inside the container, copied into the cell's directory once it stopped.
readonly COMPOSE_ACCESS_LOG_DIR=/tmp/ltsuite-cell

# compose_save_access_log: the stopped container's access log into the
# cell's directory (beside target.log); nothing when it wrote none.
compose_save_access_log() {
  [[ -n "$COMPOSE_TARGET_LOG" ]] || return 0
  docker cp "$COMPOSE_CONTAINER:$COMPOSE_ACCESS_LOG_DIR/$TARGET_ACCESS_LOG_FILE" \
    "$(dirname "$COMPOSE_TARGET_LOG")/$TARGET_ACCESS_LOG_FILE" >/dev/null 2>&1 || true
}

# compose_target_stop: stop the container (SIGTERM, SIGKILL after 10 s, as
# target_stop does), keep its log and remove it. Nothing to do if this run
# made no container since the last stop.
compose_target_stop() {
  ((COMPOSE_TARGET_CREATED)) || return 0
  docker stop --time 10 "$COMPOSE_CONTAINER" >/dev/null 2>&1 || true
  compose_save_log
  compose_save_access_log
  docker rm --force "$COMPOSE_CONTAINER" >/dev/null 2>&1 || true
  COMPOSE_TARGET_CREATED=0
  COMPOSE_TARGET_LOG=""
  COMPOSE_TARGET_PID=""
}

# compose_target_alive: succeed while the container's JVM runs.
compose_target_alive() {
  [[ -n "$COMPOSE_TARGET_PID" ]] && kill -0 "$COMPOSE_TARGET_PID" 2>/dev/null
}

# The backend interface (backend.sh) for BACKEND=compose.
compose_backend_url() { netns_backend_url "$@"; }
compose_backend_start() {
  cell_step "starting the target container" compose_cell_start "$1" "$2" "$3"
}
compose_backend_alive() { compose_target_alive; }

# compose_backend_access_log CELL_DIR: the running container's access log,
# read through its JVM's root (/proc/PID/root): the copy in the cell's
# directory is made only once the container stopped (compose_save_access_log).
# Its output so far is saved as target.log first, so a reader knows which
# Tomcat wrote the log (the unit of %D, ltsuite.accesslog.service_unit_us).
compose_backend_access_log() {
  compose_save_log
  printf '/proc/%s/root%s/%s\n' "$COMPOSE_TARGET_PID" "$COMPOSE_ACCESS_LOG_DIR" "$TARGET_ACCESS_LOG_FILE"
}
compose_backend_stop() { compose_target_stop; }
