# shellcheck shell=bash
# Summary: start, check and stop the target inside the server namespace: the
# suite's own Spring Boot jar, any other Spring Boot jar (TARGET_JAR) or any
# server command (TARGET_CMD).

TARGET_OWN_JAR="$LT_ROOT/server/target/loadtest-target.jar"
# The pid of the target this file started (its own state: target_alive and
# target_stop read it).
TARGET_PID=""
# Its output (target_start's LOG): target_configprops reads when it started.
TARGET_LOG=""
# 1 when that target is a Spring Boot jar (the suite's own or TARGET_JAR),
# whose log says when Tomcat listens (target_wait_healthy).
TARGET_LOG_SPRING=0
# The start modes and their archives (TARGET_START_MODE).
# shellcheck source=scripts/lib/target_start.sh
source "$LT_ROOT/scripts/lib/target_start.sh"
# HTTPS at the target (TARGET_TLS).
# shellcheck source=scripts/lib/tls.sh
source "$LT_ROOT/scripts/lib/tls.sh"

# The cell's Tomcat knobs as Spring Boot's own properties, so any Spring Boot
# application takes them without code (knob=property). They reach the JVM as
# environment variables in Spring's relaxed form (SERVER_TOMCAT_ACCEPTCOUNT),
# which rank above the application's own application.properties.
readonly TARGET_TOMCAT_PROPERTIES=(
  TOMCAT_MAX_THREADS=server.tomcat.threads.max
  TOMCAT_MIN_SPARE_THREADS=server.tomcat.threads.min-spare
  TOMCAT_MAX_CONNECTIONS=server.tomcat.max-connections
  TOMCAT_ACCEPT_COUNT=server.tomcat.accept-count
  TOMCAT_CONNECTION_TIMEOUT=server.tomcat.connection-timeout
  TOMCAT_KEEP_ALIVE_TIMEOUT=server.tomcat.keep-alive-timeout
  TOMCAT_MAX_KEEP_ALIVE_REQUESTS=server.tomcat.max-keep-alive-requests
)
# Each knob's name in the line the suite's own target logs for a connector
# (ConnectorSettingsLogger: the value Tomcat runs with), for the connector
# check from its log (_target_check_connector_log).
declare -grA TARGET_TOMCAT_LOGGED=(
  [TOMCAT_MAX_THREADS]=maxThreads
  [TOMCAT_MIN_SPARE_THREADS]=minSpareThreads
  [TOMCAT_MAX_CONNECTIONS]=maxConnections
  [TOMCAT_ACCEPT_COUNT]=acceptCount
  [TOMCAT_CONNECTION_TIMEOUT]=connectionTimeout
  [TOMCAT_KEEP_ALIVE_TIMEOUT]=keepAliveTimeout
  [TOMCAT_MAX_KEEP_ALIVE_REQUESTS]=maxKeepAliveRequests
)
# Spring Boot's line once the application has started ("Started App in 1.2
# seconds"), as an extended regular expression (bash's =~ and grep -E).
readonly TARGET_STARTED_RE='Started [^ ]+ in [0-9.]+ seconds'
# Properties the suite sets itself: the application must not set them too.
readonly TARGET_RESERVED_PROPERTIES=(server.address server.port management.server.port management.server.address)

# The actuator endpoints the suite reads (TARGET_ACTUATOR=needed): health
# (the health path), metrics (tomcat.threads.busy, the sampler's) and
# configprops (the connector check).
readonly TARGET_ACTUATOR_NEEDED=health,metrics,configprops
# The property TARGET_ACTUATOR=needed sets (and its exclude).
readonly TARGET_ACTUATOR_PROPERTY=management.endpoints.web.exposure.

# target_kind CELL_ASSOC: "own" (the suite's jar), "jar" (TARGET_JAR) or
# "cmd" (TARGET_CMD).
target_kind() {
  local -n kind_values="$1"
  if [[ -n "${kind_values[TARGET_CMD]:-}" ]]; then
    printf 'cmd\n'
  elif [[ -n "${kind_values[TARGET_JAR]:-}" ]]; then
    printf 'jar\n'
  else
    printf 'own\n'
  fi
}

# target_env_name PROPERTY: the environment variable Spring Boot binds to
# PROPERTY (server.tomcat.accept-count -> SERVER_TOMCAT_ACCEPTCOUNT).
target_env_name() {
  local name="${1//-/}"
  name="${name//./_}"
  printf '%s\n' "${name^^}"
}

# target_spring_env CELL_ASSOC ADDRESS [ACCESS_LOG_DIR]: "NAME=value" lines
# that give a Spring Boot application the cell's connector: address, port,
# the Tomcat knobs, and the actuator on its own connector at
# 127.0.0.1:MANAGEMENT_PORT (so sampling it never queues behind the saturated
# main port), with the readiness probe at /readyz on the main port; with
# ACCESS_LOG_DIR, Tomcat's access log there (target_accesslog_env).
target_spring_env() {
  local -n spring_values="$1"
  local address="$2" pair
  printf 'SERVER_ADDRESS=%s\nSERVER_PORT=%s\n' "$address" "${spring_values[SERVER_PORT]}"
  printf 'MANAGEMENT_SERVER_ADDRESS=127.0.0.1\nMANAGEMENT_SERVER_PORT=%s\n' "${spring_values[MANAGEMENT_PORT]}"
  # With the actuator on its own port, the readiness probe also answers on
  # the main port (/readyz), the one under test: TARGET_HEALTH_PATH=/readyz.
  printf 'MANAGEMENT_ENDPOINT_HEALTH_PROBES_ENABLED=true\nMANAGEMENT_ENDPOINT_HEALTH_PROBES_ADDADDITIONALPATHS=true\n'
  # Tomcat's MBean registry, which its thread and connection meters
  # (tomcat.threads.busy, the sampler's) need, on every Spring Boot from 2.2
  # to 4.x (off by default).
  printf 'SERVER_TOMCAT_MBEANREGISTRY_ENABLED=true\n'
  # The connector check's values (Spring Boot 3 and later hide them unless
  # asked), on the actuator's loopback-only port.
  printf 'MANAGEMENT_ENDPOINT_CONFIGPROPS_SHOWVALUES=always\n'
  # What the suite reads (TARGET_ACTUATOR=needed, the default), exposed on
  # that port: health, metrics (busy threads) and configprops; an exclude
  # list of the application's would win over any include, so it is emptied.
  if [[ "${spring_values[TARGET_ACTUATOR]:-needed}" != as-is ]]; then
    printf 'MANAGEMENT_ENDPOINTS_WEB_EXPOSURE_INCLUDE=%s\nMANAGEMENT_ENDPOINTS_WEB_EXPOSURE_EXCLUDE=\n' "$TARGET_ACTUATOR_NEEDED"
  fi
  for pair in "${TARGET_TOMCAT_PROPERTIES[@]}"; do
    printf '%s=%s\n' "$(target_env_name "${pair#*=}")" "${spring_values[${pair%%=*}]}"
  done
  # TOMCAT_VIRTUAL_THREADS: a bool knob, a boolean property (the cell's value
  # either way, over the application's own).
  local virtual=false
  [[ "${spring_values[TOMCAT_VIRTUAL_THREADS]:-0}" != 1 ]] || virtual=true
  printf 'SPRING_THREADS_VIRTUAL_ENABLED=%s\n' "$virtual"
  # TARGET_TLS: HTTPS on the port under test (server.ssl.*).
  tls_spring_env "$1"
  [[ -z "${3:-}" ]] || target_accesslog_env "$3"
}

# Tomcat's access log of the port under test (AccessLogValve), the
# application's own account of every request: when a thread began it (epoch
# ms), its processing time (%D: microseconds from Tomcat 10.1 on), status,
# the client's port, the request id header of the suite's scenarios
# (scenarios/lib/requestid.js), method and path. Read by
# scripts/ltsuite/accesslog.py, which knows these fields by this order.
readonly TARGET_ACCESS_LOG_PATTERN='%{begin:msec}t %D %s %{remote}p %{X-Request-Id}i %m %U'
readonly TARGET_ACCESS_LOG_FILE=tomcat-access.log

# target_accesslog_env DIR: "NAME=value" lines that turn on Spring Boot's
# server.tomcat.accesslog.* in any Spring Boot jar, without code: one file,
# DIR/tomcat-access.log, not rotated (no date in its name) and unbuffered,
# so every line is on disk when the row is read, even after a SIGKILL. The
# actuator's own connector logs to management_tomcat-access.log beside it
# (Spring Boot's management.server.accesslog.prefix).
target_accesslog_env() {
  local dir="$1"
  printf 'SERVER_TOMCAT_ACCESSLOG_ENABLED=true\nSERVER_TOMCAT_ACCESSLOG_DIRECTORY=%s\n' "$dir"
  printf 'SERVER_TOMCAT_ACCESSLOG_PREFIX=%s\nSERVER_TOMCAT_ACCESSLOG_SUFFIX=.%s\n' \
    "${TARGET_ACCESS_LOG_FILE%.*}" "${TARGET_ACCESS_LOG_FILE##*.}"
  printf 'SERVER_TOMCAT_ACCESSLOG_ROTATE=false\nSERVER_TOMCAT_ACCESSLOG_BUFFERED=false\n'
  printf 'SERVER_TOMCAT_ACCESSLOG_PATTERN=%s\n' "$TARGET_ACCESS_LOG_PATTERN"
}

# target_app_env CELL_ASSOC: "NAME=value" lines of TARGET_ENV_FILE (the
# application's own settings), nothing without one.
target_app_env() {
  local -n app_values="$1"
  [[ -n "${app_values[TARGET_ENV_FILE]:-}" ]] || return 0
  envfile_each "${app_values[TARGET_ENV_FILE]}" _target_print_pair
}

_target_print_pair() {
  printf '%s=%s\n' "$3" "$4"
}

# target_cmd_words CELL_ASSOC: TARGET_CMD as words, one a line, with
# {SERVER_ADDR} and {SERVER_PORT} replaced. Never run through a shell.
target_cmd_words() {
  local -n cmd_values="$1"
  local word
  local -a words
  read -r -a words <<<"${cmd_values[TARGET_CMD]}"
  for word in "${words[@]}"; do
    word="${word//\{SERVER_ADDR\}/${cmd_values[SERVER_ADDR]}}"
    printf '%s\n' "${word//\{SERVER_PORT\}/${cmd_values[SERVER_PORT]}}"
  done
}

# target_java_command CELL_ASSOC: the java the cell's target starts with (a
# JDK 25 or later for an AOT cache, the java on PATH otherwise), then its
# arguments after the heap: the TARGET_JAVA_OPTS words, the archive option
# of the cell's start mode (target_start_plan: an AOT cache, a
# class-data-sharing archive or none), -jar and the jar (an extracted copy
# when there is an archive), then the TARGET_ARGS words. One a line.
target_java_command() {
  local -n java_values="$1"
  local -a opts args words
  read -r -a opts <<<"${java_values[TARGET_JAVA_OPTS]:-}"
  read -r -a args <<<"${java_values[TARGET_ARGS]:-}"
  # words: the java, the archive options, the jar.
  mapfile -t words < <(target_start_words java_values)
  printf '%s\n' "${words[0]}"
  # An empty list prints nothing (printf would print one empty word).
  [[ ${#opts[@]} -eq 0 ]] || printf '%s\n' "${opts[@]}"
  [[ ${#words[@]} -le 2 ]] || printf '%s\n' "${words[@]:1:${#words[@]}-2}"
  printf '%s\n' -jar "${words[-1]}"
  [[ ${#args[@]} -eq 0 ]] || printf '%s\n' "${args[@]}"
}

# target_java_args CELL_ASSOC: target_java_command without the java.
target_java_args() {
  target_java_command "$1" | tail -n +2
}

# target_java_bin CELL_ASSOC: the java of target_java_command.
target_java_bin() {
  target_java_command "$1" | head -n 1
}

# target_start CELL_ASSOC LOG: start the target with the cell's settings, in
# the background; its pid goes to TARGET_PID. It gets nothing from the
# caller's environment: a Spring Boot jar gets the connector as Spring Boot
# properties (target_spring_env) and TARGET_ENV_FILE; the suite's own jar
# also every knob of the cell (it reads DELAY_MS and the waiting-room
# settings); a TARGET_CMD server gets SERVER_ADDR, SERVER_PORT and
# TARGET_ENV_FILE. The ltsuite.run_id property marks the JVM as this suite's.
target_start() {
  local -n cell_values="$1"
  local log="$2" key kind
  kind="$(target_kind cell_values)"
  # LT_RUN_ID marks every target (and what a TARGET_CMD starts) as this run's.
  local -a env_args=("PATH=$PATH" "HOME=${HOME:-/root}" "LT_RUN_ID=$LT_RUN_ID") app_env command
  mapfile -t app_env < <(target_app_env cell_values)
  if [[ "$kind" == own ]]; then
    env_args+=("MANAGEMENT_ADDRESS=127.0.0.1")
    for key in "${!cell_values[@]}"; do
      env_args+=("$key=${cell_values[$key]}")
    done
  fi
  if [[ "$kind" == cmd ]]; then
    env_args+=("SERVER_ADDR=${cell_values[SERVER_ADDR]}" "SERVER_PORT=${cell_values[SERVER_PORT]}" "${app_env[@]}")
    mapfile -t command < <(target_cmd_words cell_values)
  else
    env_args+=("${app_env[@]}")
    mapfile -t -O "${#env_args[@]}" env_args < <(target_spring_env cell_values "${cell_values[SERVER_ADDR]}" "$(readlink -f "$(dirname "$log")")")
    target_start_warm cell_values
    local -a java_command
    mapfile -t java_command < <(target_java_command cell_values)
    command=("${java_command[0]}" "-Xmx${cell_values[SERVER_HEAP]}" -Djava.net.preferIPv4Stack=true "-Dltsuite.run_id=$LT_RUN_ID"
      "${java_command[@]:1}")
  fi
  # A simple command (not a function) in the background, and setsid, ip
  # netns exec and env all exec: $! is the server itself, the leader of a
  # session and process group of its own, so target_stop ends whatever it
  # starts too (a wrapper script's server, mvn spring-boot:run's JVM). With
  # job control on, the job already has its group (setsid would fork).
  # 9>&-: it must not hold the run lock (run-matrix.sh LT_LOCK_FD).
  local -a own_group=(setsid)
  [[ $- != *m* ]] || own_group=()
  "${own_group[@]}" ip netns exec "$(netns_name server)" env -i "${env_args[@]}" "${command[@]}" >"$log" 2>&1 9>&- &
  TARGET_PID=$!
  TARGET_LOG="$log"
  TARGET_LOG_SPRING=1
  [[ "$kind" != cmd ]] || TARGET_LOG_SPRING=0
  # Which start it got (not for a training start: target_train), written
  # while the JVM starts.
  [[ -n "$TARGET_TRAINING" ]] || target_record_start cell_values "$(dirname "$log")/target-start.txt"
}

# target_knob_problems ORIGINS_ASSOC VALUES_ASSOC: "WHERE: KEY: message" for
# every target knob that cannot work as set (WHERE from ORIGINS, e.g.
# "file:line"), one a line; nothing when all is well. Read before anything
# starts.
target_knob_problems() {
  local -n origin_of="$1" knob_value="$2"
  local pair key word property
  if [[ -n "${knob_value[TARGET_CMD]}" ]]; then
    for pair in "${TARGET_TOMCAT_PROPERTIES[@]}" TOMCAT_SO_LINGER= TOMCAT_VIRTUAL_THREADS= TARGET_JAR= TARGET_JAVA_OPTS= TARGET_ARGS=; do
      key="${pair%%=*}"
      [[ "${origin_of[$key]}" == defaults ]] \
        || printf '%s: %s: a setting of a Spring Boot target, but TARGET_CMD starts a server that is not one; remove %s or TARGET_CMD\n' "${origin_of[$key]}" "$key" "$key"
    done
  elif [[ -n "${knob_value[TARGET_JAR]}" && "${origin_of[TOMCAT_SO_LINGER]}" != defaults ]]; then
    # Spring Boot has no property for SO_LINGER: only the suite's own target
    # reads this knob (a connector customizer).
    printf "%s: TOMCAT_SO_LINGER: only the suite's own target sets SO_LINGER (Spring Boot has no property for it); remove it or TARGET_JAR\n" "${origin_of[TOMCAT_SO_LINGER]}"
  fi
  if [[ -n "${knob_value[TARGET_URL]}" ]]; then
    for key in TARGET_JAR TARGET_CMD TARGET_ENV_FILE; do
      [[ -z "${knob_value[$key]}" ]] \
        || printf '%s: %s: the suite starts no target when TARGET_URL names a running one\n' "${origin_of[$key]}" "$key"
    done
  fi
  if [[ "${knob_value[BACKEND]}" == compose ]]; then
    [[ -z "${knob_value[TARGET_CMD]}" ]] \
      || printf '%s: TARGET_CMD: BACKEND=compose runs a Spring Boot jar in a container (the suite'"'"'s own or TARGET_JAR), not a command; use BACKEND=netns\n' "${origin_of[TARGET_CMD]}"
    if [[ -n "${knob_value[TARGET_JAR]}" && "${origin_of[TARGET_IMAGE]}" != defaults ]]; then
      printf '%s: TARGET_IMAGE: BACKEND=compose builds the image of TARGET_JAR itself; set one of TARGET_JAR and TARGET_IMAGE\n' "${origin_of[TARGET_IMAGE]}"
    fi
  fi
  if [[ -z "${knob_value[TARGET_CMD]:-}" && -z "${knob_value[TARGET_URL]:-}" ]]; then
    _target_port_clash origin_of knob_value
  fi
  _target_virtual_threads_problems origin_of knob_value
  [[ "${knob_value[TARGET_HEALTH_PATH]}" == /* ]] \
    || printf "%s: TARGET_HEALTH_PATH: '%s' is not a path (it starts with /)\n" "${origin_of[TARGET_HEALTH_PATH]}" "${knob_value[TARGET_HEALTH_PATH]}"
  _target_actuator_health_proxy origin_of knob_value
  _target_path_scenario origin_of knob_value
  local -a words
  read -r -a words <<<"${knob_value[TARGET_ARGS]}"
  for word in "${words[@]}"; do
    for property in "${TARGET_RESERVED_PROPERTIES[@]}" server.tomcat.; do
      if [[ "$word" == --"$property"* ]]; then
        printf "%s: TARGET_ARGS: '%s' is set by the suite from the cell's knobs (SERVER_ADDR, SERVER_PORT, MANAGEMENT_PORT, TOMCAT_*)\n" "${origin_of[TARGET_ARGS]}" "$word"
      fi
    done
  done
  _target_actuator_words origin_of knob_value
  if [[ -n "${knob_value[TARGET_ENV_FILE]}" ]]; then
    TARGET_ENV_ACTUATOR="${knob_value[TARGET_ACTUATOR]:-needed}"
    envfile_each "${knob_value[TARGET_ENV_FILE]}" _target_reserved_env
  fi
}

# _target_actuator_words ORIGINS_ASSOC VALUES_ASSOC: with TARGET_ACTUATOR=
# needed (in any cell), an exposure set in TARGET_ARGS (--name=value) or
# TARGET_JAVA_OPTS (-Dname=value): both rank above the environment the suite
# sets it in, so the endpoints the suite reads would be hidden again.
_target_actuator_words() {
  local -n actuator_origin="$1" actuator_value="$2"
  local key word prefix
  [[ " ${actuator_value[TARGET_ACTUATOR]:-needed} " == *" needed "* && -z "${actuator_value[TARGET_CMD]:-}" ]] || return 0
  for key in TARGET_ARGS TARGET_JAVA_OPTS; do
    prefix=--
    [[ "$key" == TARGET_ARGS ]] || prefix=-D
    local -a words=()
    read -r -a words <<<"${actuator_value[$key]:-}"
    for word in "${words[@]}"; do
      [[ "$word" == "$prefix$TARGET_ACTUATOR_PROPERTY"* ]] || continue
      printf "%s: %s: '%s': TARGET_ACTUATOR=needed exposes %s on the suite's own loopback connector; remove it, or set TARGET_ACTUATOR=as-is to keep the application's own exposure\n" \
        "${actuator_origin[$key]}" "$key" "$word" "$TARGET_ACTUATOR_NEEDED"
    done
  done
}

# _target_virtual_threads_problems ORIGINS_ASSOC VALUES_ASSOC:
# TOMCAT_VIRTUAL_THREADS=1 where the suite cannot honour it: a target it does
# not start (TARGET_URL), a container whose JDK is its image's
# (BACKEND=compose), no JDK 21 or later on this host (TARGET_CMD is refused
# with the other Spring Boot settings).
_target_virtual_threads_problems() {
  local -n vt_origin="$1" vt_value="$2"
  local where="${vt_origin[TOMCAT_VIRTUAL_THREADS]:-defaults}"
  # An axis (0 1) asks for them too.
  [[ " ${vt_value[TOMCAT_VIRTUAL_THREADS]:-0} " == *" 1 "* && -z "${vt_value[TARGET_CMD]:-}" ]] || return 0
  if [[ -n "${vt_value[TARGET_URL]:-}" ]]; then
    printf '%s: TOMCAT_VIRTUAL_THREADS: the suite starts no target when TARGET_URL names a running one (set spring.threads.virtual.enabled in that application)\n' "$where"
  elif [[ "${vt_value[BACKEND]:-netns}" == compose ]]; then
    printf "%s: TOMCAT_VIRTUAL_THREADS: BACKEND=compose runs the target on its image's JDK; virtual threads run with BACKEND=netns\n" "$where"
  elif [[ -z "$(target_newest_java "$TARGET_VIRTUAL_THREADS_JDK")" ]]; then
    printf '%s: TOMCAT_VIRTUAL_THREADS: virtual threads need JDK %s or later; none found (JAVA_HOME, PATH, %s/*)\n' \
      "$where" "$TARGET_VIRTUAL_THREADS_JDK" "$TARGET_JDK_DIRS"
  fi
}

# _target_port_clash ORIGINS_ASSOC VALUES_ASSOC: a SERVER_PORT that is also a
# MANAGEMENT_PORT (either may be an axis). Spring Boot then puts the actuator
# on the port under test, where sampling it queues behind the load and the
# runner's 127.0.0.1:MANAGEMENT_PORT finds nothing. Named by the key that was
# set (MANAGEMENT_PORT when both were).
_target_port_clash() {
  local -n clash_origin="$1" clash_value="$2"
  local server management key=MANAGEMENT_PORT other=SERVER_PORT
  [[ "${clash_origin[MANAGEMENT_PORT]:-defaults}" != defaults ]] || { key=SERVER_PORT other=MANAGEMENT_PORT; }
  for server in ${clash_value[SERVER_PORT]:-}; do
    for management in ${clash_value[MANAGEMENT_PORT]:-}; do
      ((10#$server != 10#$management)) && continue
      printf '%s: %s: %s is %s too (%s); the actuator needs a port of its own\n' "${clash_origin[$key]}" "$key" \
        "$([[ $key == SERVER_PORT ]] && printf '%s' "$server" || printf '%s' "$management")" "$other" "${clash_origin[$other]}"
      return 0
    done
  done
}

# _target_actuator_health_proxy ORIGINS_ASSOC VALUES_ASSOC: a health path
# under /actuator/ is asked on the actuator's own port (target_health_probe),
# which every target kind and scenario takes: the runner checks it, and k6
# is told so (TARGET_CHECKED=1: no scenario asks it again). nginx in front
# (PROXY=nginx) is checked through the users' path before the load
# (proxy_check), on the port under test, where the actuator is not.
_target_actuator_health_proxy() {
  local -n health_origin="$1" health_value="$2"
  [[ "${health_value[TARGET_HEALTH_PATH]}" == /actuator/* && -z "${health_value[TARGET_CMD]:-}" ]] || return 0
  [[ " ${health_value[PROXY]:-none} " == *" nginx "* ]] || return 0
  printf "%s: TARGET_HEALTH_PATH: '%s' is on the actuator's own port, which nginx does not front (PROXY=nginx is checked through the users' port before its load); use a path the application answers on SERVER_PORT, e.g. /readyz (the readiness probe the suite turns on)\n" \
    "${health_origin[TARGET_HEALTH_PATH]}" "${health_value[TARGET_HEALTH_PATH]}"
}

# _target_path_scenario ORIGINS_ASSOC VALUES_ASSOC: TARGET_PATH with a
# scenario that does not read it: the waiting room and WebSocket scenarios
# ask their own endpoints. A script of one's own (a path) asks its own URLs
# and takes it for its warm-up: TARGET_PATH then names the path the warm-up
# asks, where the script's users go (warmup.sh), so the load does not meet a
# code path the JVM has not run yet.
_target_path_scenario() {
  local -n path_origin="$1" path_value="$2"
  local scenario
  [[ -n "${path_value[TARGET_PATH]:-}" ]] || return 0
  for scenario in ${path_value[SCENARIO]:-}; do
    case "$scenario" in
      spike | burst | spike-open | ramp | keepalive | */* | *.js) continue ;;
    esac
    printf "%s: TARGET_PATH: the scenario '%s' does not read it (spike, burst, spike-open, ramp and keepalive do; a script of your own takes it for its warm-up); remove it or choose one of those\n" \
      "${path_origin[TARGET_PATH]}" "$scenario"
    return 0
  done
}

# _target_reserved_env FILE LINE KEY VALUE: a TARGET_ENV_FILE line that would
# set what the cell sets.
_target_reserved_env() {
  local file="$1" line_no="$2" key="$3" property
  for property in "${TARGET_RESERVED_PROPERTIES[@]}"; do
    if [[ "$key" == "$(target_env_name "$property")" ]]; then
      printf '%s:%s: %s: set by the suite from the cell'"'"'s knobs; remove it here\n' "$file" "$line_no" "$key"
    fi
  done
  if [[ "${TARGET_ENV_ACTUATOR:-needed}" == *needed* && "$key" == "$(target_env_name "$TARGET_ACTUATOR_PROPERTY")"* ]]; then
    printf '%s:%s: %s: TARGET_ACTUATOR=needed exposes %s on the suite'"'"'s own loopback connector; remove it here, or set TARGET_ACTUATOR=as-is\n' \
      "$file" "$line_no" "$key" "$TARGET_ACTUATOR_NEEDED"
  fi
  if [[ "$key" == SERVER_TOMCAT_* ]]; then
    printf '%s:%s: %s: the Tomcat connector is set by the cell'"'"'s TOMCAT_* knobs; remove it here\n' "$file" "$line_no" "$key"
  fi
}

# The path a target is waited for at when TARGET_HEALTH_PATH is left at its
# default (/health, the suite's own target's): a Spring Boot jar of one's own
# has the readiness probe the suite turns on (target_spring_env).
readonly TARGET_JAR_HEALTH_PATH=/readyz
# Seconds a target may answer its health path with 404, or not answer once
# its log says it started, before the cell fails: not a start-up moment any
# more, a path that is not there.
readonly TARGET_HEALTH_GRACE_S=3

# target_health_default ORIGINS_ASSOC VALUES_ASSOC: the health path the run
# waits for when TARGET_HEALTH_PATH was not set (origin "defaults"): /readyz
# for a Spring Boot jar of one's own, nothing to change otherwise.
target_health_default() {
  local -n default_origin="$1" default_value="$2"
  [[ "${default_origin[TARGET_HEALTH_PATH]}" == defaults && -n "${default_value[TARGET_JAR]}" \
    && -z "${default_value[TARGET_CMD]}" && -z "${default_value[TARGET_URL]}" ]] || return 0
  printf '%s\n' "$TARGET_JAR_HEALTH_PATH"
}

# The warm-up a run's cells get when WARMUP and WARMUP_UNTIL were left at
# their defaults (env/defaults.env: 5s, ended by time, for the suite's own
# target; its /hello a sleep, it keeps the seeds' exact figures): a Spring
# Boot jar of one's own warms up until the application's own time at the
# path has settled (ltsuite.warmsettle), at most TARGET_JAR_WARMUP; a
# TARGET_CMD server and an external TARGET_URL keep their own (none: the
# suite does not know what warms them).
readonly TARGET_JAR_WARMUP=60s
readonly TARGET_JAR_WARMUP_UNTIL=settled
readonly TARGET_OTHER_WARMUP=0s

# target_warmup_default ORIGINS_ASSOC VALUES_ASSOC: "WARMUP WARMUP_UNTIL"
# for the run's cells when WARMUP was not set (origin "defaults"), each
# left as it is (-) when set; nothing for the suite's own target (the
# defaults hold).
target_warmup_default() {
  local -n warm_origin="$1" warm_value="$2"
  local warmup until="-"
  [[ "${warm_origin[WARMUP]}" == defaults ]] || return 0
  if [[ -n "${warm_value[TARGET_CMD]}" || -n "${warm_value[TARGET_URL]}" ]]; then
    warmup="$TARGET_OTHER_WARMUP"
  elif [[ -n "${warm_value[TARGET_JAR]}" ]]; then
    warmup="$TARGET_JAR_WARMUP"
    [[ "${warm_origin[WARMUP_UNTIL]:-defaults}" != defaults ]] || until="$TARGET_JAR_WARMUP_UNTIL"
  else
    return 0
  fi
  printf '%s %s\n' "$warmup" "$until"
}

# target_apply_defaults ORIGINS_ASSOC VALUES_ASSOC: the knobs whose default
# depends on the kind of target, resolved in VALUES_ASSOC before the cells
# are made (the cells, and k6, get them): TARGET_HEALTH_PATH
# (target_health_default), WARMUP and WARMUP_UNTIL (target_warmup_default).
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
target_apply_defaults() {
  local path warmup="" until=""
  path="$(target_health_default "$1" "$2")"
  read -r warmup until < <(target_warmup_default "$1" "$2") || true
  local -n applied_value="$2"
  [[ -z "$path" ]] || applied_value[TARGET_HEALTH_PATH]="$path"
  [[ -z "$warmup" ]] || applied_value[WARMUP]="$warmup"
  [[ -z "$until" || "$until" == - ]] || applied_value[WARMUP_UNTIL]="$until"
}

# target_health_probe CELL_ASSOC BASE_URL: "SIDE URL": where the runner asks
# for the health path. A Spring Boot target's actuator is on its own
# connector (127.0.0.1:MANAGEMENT_PORT, target_spring_env), so a path under
# /actuator/ is asked there, in the server namespace; any other path on the
# port under test, from the client namespace.
target_health_probe() {
  local -n probe_values="$1"
  local base_url="$2" path="${probe_values[TARGET_HEALTH_PATH]}"
  if [[ "$path" == /actuator/* && "$(target_kind probe_values)" != cmd ]]; then
    printf 'server http://127.0.0.1:%s%s\n' "${probe_values[MANAGEMENT_PORT]}" "$path"
  else
    printf 'client %s%s\n' "$base_url" "$path"
  fi
}

# target_health_hint CELL_ASSOC: what to set instead of a health path that is
# not there, for the cell's kind of target.
target_health_hint() {
  local -n hint_values="$1"
  case "$(target_kind hint_values)" in
    own) printf "; the suite's own target answers /health\n" ;;
    jar) printf '; left unset it is %s, the readiness probe the suite turns on in a Spring Boot jar (a path under /actuator/ is asked on the actuator'"'"'s port, MANAGEMENT_PORT=%s)\n' \
      "$TARGET_JAR_HEALTH_PATH" "${hint_values[MANAGEMENT_PORT]}" ;;
    cmd) printf '\n' ;;
  esac
}

# Seconds between asks of the health path while a Spring Boot target's log
# has not yet said that Tomcat listens (a log without that line: its logging
# turned off), in microseconds.
readonly TARGET_HEALTH_LOGLESS_ASK_US=250000

# target_wait_healthy URL TIMEOUT_S ALIVE_CMD [LOG [SIDE [HINT]]]: poll URL
# from the SIDE namespace (default client) until it answers 200, ALIVE_CMD
# (the backend's own check that its target still runs) fails, or TIMEOUT_S
# pass. A path that is not there fails within TARGET_HEALTH_GRACE_S instead
# of TIMEOUT_S: URL answered 404 all that time, or the target's LOG said it
# had started (Spring Boot's "Started ... in") and URL still did not answer.
# HINT is appended to those messages (target_health_hint). On failure the
# reason is in CELL_ERROR.
# The Spring Boot target target_start started (LOG is its TARGET_LOG): URL
# is asked (a process pair, ip netns exec and curl, on the cores the JVM
# starts on) once the log says Tomcat listens ("Tomcat started on port",
# or "Started ... in"), its new lines read every 20 ms by the shell itself
# from an open descriptor; until then every TARGET_HEALTH_LOGLESS_ASK_US.
# The pauses are sleep processes, not `read -t`: bash 5.2's read timeout is
# a SIGALRM and a longjmp, and a runner that paused that way once crashed
# in its exit trap minutes later ("longjmp causes uninitialized stack
# frame"), leaving its namespaces behind.
target_wait_healthy() {
  local log="${4:-}" status=0 log_fd="" partial=""
  if [[ -n "$log" && "$log" == "$TARGET_LOG" && "$TARGET_LOG_SPRING" == 1 && -f "$log" ]]; then
    exec {log_fd}<"$log"
  fi
  _target_wait_healthy_loop "$@" || status=$?
  [[ -z "$log_fd" ]] || exec {log_fd}<&-
  return "$status"
}

# _target_log_news: the lines the target's log got since the last look
# (log_fd, partial: target_wait_healthy's), whether one says Tomcat listens
# (listening=1) and Spring Boot's "Started ... in" (started_line).
_target_log_news() {
  local piece
  while IFS= read -r -u "$log_fd" piece; do
    piece="$partial$piece"
    partial=""
    [[ "$piece" != *"Tomcat started on port"* ]] || listening=1
    if [[ -z "$started_line" && "$piece" =~ $TARGET_STARTED_RE ]]; then
      started_line="${BASH_REMATCH[0]}"
      listening=1
    fi
  done
  partial+="$piece"
}

# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
_target_wait_healthy_loop() {
  local url="$1" timeout_s="$2" alive="$3" log="${4:-}" side="${5:-client}" hint="${6:-}"
  local deadline code="" not_found_since="" started_since="" started_line="" path listening=1 next_ask=0 now
  local -a own_port
  # From the users' namespace, on a port the users cannot have (netns_curl_ports).
  mapfile -t own_port < <(netns_curl_ports "$side")
  path="/${url#*://*/}"
  [[ "$url" == *://*/* ]] || path=/
  [[ -z "$log_fd" ]] || listening=0
  deadline=$((SECONDS + timeout_s))
  while ((SECONDS < deadline)); do
    if ! "$alive"; then
      cell_error "target exited during start-up"
      return 1
    fi
    if [[ -n "$log_fd" ]]; then
      _target_log_news
      now="${EPOCHREALTIME/./}"
      if ((listening == 0 && now < next_ask)); then
        sleep 0.02
        continue
      fi
      next_ask=$((now + TARGET_HEALTH_LOGLESS_ASK_US))
    fi
    # curl prints 000 when nothing answered (refused, timed out).
    code="$(netns_exec "$side" curl -sS "${own_port[@]}" -o /dev/null -w '%{http_code}' --max-time 1 "$url" 2>/dev/null)" || true
    [[ "$code" =~ ^[0-9]{3}$ ]] || code=000
    [[ "$code" != 200 ]] || return 0
    if [[ "$code" == 404 ]]; then
      not_found_since="${not_found_since:-$SECONDS}"
      if ((SECONDS - not_found_since >= TARGET_HEALTH_GRACE_S)); then
        cell_error "target answers 404 (not found) to GET $path at $url: set TARGET_HEALTH_PATH to a path it answers with 200 once ready$hint"
        return 1
      fi
    else
      not_found_since=""
    fi
    if [[ -z "$started_since" && -n "$log" ]]; then
      if [[ -n "$log_fd" ]]; then
        [[ -z "$started_line" ]] || started_since=$SECONDS
      elif started_line="$(grep -m1 -oE "$TARGET_STARTED_RE" "$log" 2>/dev/null)"; then
        started_since=$SECONDS
      fi
    fi
    if [[ -n "$started_since" && "$code" == 000 ]] && ((SECONDS - started_since >= TARGET_HEALTH_GRACE_S)); then
      cell_error "target logged '$started_line' but nothing answers GET $path at $url: set TARGET_HEALTH_PATH to a path it answers with 200 once ready$hint"
      return 1
    fi
    # Every 50 ms: a cell waits for its target, and one ask costs about 10 ms.
    sleep 0.05
  done
  cell_error "target did not answer $url within ${timeout_s}s (last answer: $([[ "$code" == 000 || -z "$code" ]] && printf 'none' || printf 'HTTP %s' "$code"))"
  return 1
}

# target_exit_reason LOG: why the target this file started is gone, added
# to CELL_ERROR: its exit status (reaped here, in the caller's shell: a
# subshell cannot wait for it) and the last lines of its output (stdout and
# stderr), never an empty line.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
target_exit_reason() {
  local log="$1" status=0 tail_text
  [[ -n "$TARGET_PID" ]] || return 0
  wait "$TARGET_PID" 2>/dev/null || status=$?
  TARGET_PID=""
  tail_text="$(target_log_tail "$log")"
  cell_error "$CELL_ERROR"": exit status $status; ${tail_text:-it wrote nothing}"
}

# target_log_tail LOG: the last few non-blank lines of LOG joined by " | "
# (at most 400 characters), after "its output ends: "; nothing when LOG
# has none.
target_log_tail() {
  local text
  text="$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 4 | sed 's/^[[:space:]]*//' | paste -sd'|' | sed 's/|/ | /g' | cut -c1-400)"
  [[ -z "$text" ]] || printf 'its output ends: %s\n' "$text"
}

# target_alive: succeed while the target process runs.
target_alive() {
  [[ -n "$TARGET_PID" ]] && kill -0 "$TARGET_PID" 2>/dev/null
}

# target_stop: stop the target and every process it started, its whole
# process group (SIGTERM, then SIGKILL after 10 s), and reap it.
target_stop() {
  [[ -n "$TARGET_PID" ]] || return 0
  stop_pid "-$TARGET_PID" 10 || true
  # Its group gone or never made while it still runs: the process itself, so
  # the wait below always ends.
  end_child "$TARGET_PID" TERM 5 || true
  TARGET_PID=""
}

# target_metrics_port CELL_ASSOC: the port of the target's actuator, empty
# for a TARGET_CMD server (it has none).
target_metrics_port() {
  local -n port_values="$1"
  [[ "$(target_kind port_values)" == cmd ]] || printf '%s\n' "${port_values[MANAGEMENT_PORT]}"
}

# Seconds the connector check waits for the actuator's port to listen.
TARGET_CHECK_WAIT_S=10

# target_check_connector CELL_ASSOC [LOG]: compare the connector settings the
# running application runs with against the cell's knobs; print {checked,
# reason, source, mismatches: [{property, cell, effective, source}]}
# (checked false with the reason when it cannot say). The suite's own
# target, given its LOG: the settings it logged, read back from Tomcat
# (_target_check_connector_log: no request to an actuator just started, no
# jq). Any other Spring Boot
# jar, or a LOG without that line (its logging turned off): what the
# actuator reports (/actuator/configprops: Boot 2.7/3's ServerProperties,
# Boot 4's TomcatServerProperties, connector.jq); it asks for the "server"
# prefix (every bean whose prefix starts with it, Spring Boot 2.7 and later:
# 5 KB instead of 17), else the whole endpoint, and checks the threads the
# connector runs on too (target_check_threads).
# shellcheck disable=SC2034 # SC2034: read through a nameref (target_kind)
target_check_connector() {
  local -n connector_values="$1"
  if [[ -n "${2:-}" && "$(target_kind connector_values)" == own ]] && _target_check_connector_log "$1" "$2"; then
    return 0
  fi
  _target_check_connector_props "$1"
}

# Seconds the log check waits for its line after the port under test
# answered (the listener logs it just after that port opens) unless the log
# says Spring Boot started; then it asks the actuator instead.
TARGET_LOG_LINE_WAIT_S=2

# target_logged_connector ASSOC LOG ADDRESS PORT WAIT_S: the settings the
# suite's own target logged for its connector on ADDRESS:PORT
# (ConnectorSettingsLogger: 'connector "http-nio-ADDRESS-PORT":
# maxThreads=200 ...') into ASSOC (name -> value). Not there yet: LOG is
# read again every 50 ms for up to WAIT_S, or until the log has gone past
# where the line would be: Spring Boot's "Started ... in", or Tomcat's line
# for another port after its "Tomcat started on port PORT" (the listener
# logs right after it, on the same thread); fails then (the logging of the
# suite's classes turned off, say). Bash builtins only, no process per
# look: a JVM has just started on the same cores.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref
target_logged_connector() {
  local -n logged_into="$1"
  local log="$2" address="$3" port="$4" deadline=$((SECONDS + $5)) line past ours word
  local connector='connector "[^"]*-([^"]+)-([0-9]+)": (maxThreads=-?[0-9]+( [a-zA-Z]+=[^ ]+)*)'
  local tomcat='Tomcat (initialized with|started on) port(\(s\))?:? ([0-9]+)'
  local -a words
  while :; do
    past=0 ours=0
    if [[ -r "$log" ]]; then
      while IFS= read -r line || [[ -n "$line" ]]; do
        if [[ "$line" =~ $connector && "${BASH_REMATCH[1]}" == "$address" && "${BASH_REMATCH[2]}" == "$port" ]]; then
          read -ra words <<<"${BASH_REMATCH[3]}"
          for word in "${words[@]}"; do
            logged_into[${word%%=*}]="${word#*=}"
          done
          return 0
        fi
        if [[ "$line" =~ $tomcat ]]; then
          if [[ "${BASH_REMATCH[3]}" == "$port" ]]; then
            [[ "${BASH_REMATCH[1]}" != "started on" ]] || ours=1
          elif ((ours == 1)); then
            past=1
          fi
        fi
        [[ ! "$line" =~ $TARGET_STARTED_RE ]] || past=1
      done <"$log"
    fi
    ((past == 0 && SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

# _target_check_connector_log CELL_ASSOC LOG: target_check_connector from the
# suite's own target's log: the connector on SERVER_ADDR:SERVER_PORT as
# Tomcat reports it (target_logged_connector) against the cell's knobs, and
# its threads: Tomcat reports maxThreads (and minSpareThreads) -1 when the
# executor is not its own pool (AbstractEndpoint.getMaxThreads(): Spring
# Boot's virtual-thread executor), the rule target_check_threads reads from
# the actuator. A pool's min-spare is at most its max (Tomcat takes the
# smaller). Fails, printing nothing, when the log has no such line.
_target_check_connector_log() {
  local -n log_values="$1"
  local log="$2" pair name knob property want=false set_to effective mismatches="" item
  local -A logged=()
  target_logged_connector logged "$log" "${log_values[SERVER_ADDR]}" "${log_values[SERVER_PORT]}" "$TARGET_LOG_LINE_WAIT_S" || return 1
  [[ "${log_values[TOMCAT_VIRTUAL_THREADS]:-0}" != 1 ]] || want=true
  effective=false
  [[ "${logged[maxThreads]}" != -1 ]] || effective=true
  if [[ "$effective" != "$want" ]]; then
    item="\"property\":\"spring.threads.virtual.enabled\",\"cell\":\"$want\",\"effective\":"
    if [[ "$effective" == true ]]; then item+='"true"'; else item+="\"false (a pool of ${logged[maxThreads]} threads)\""; fi
    mismatches+="{$item,\"source\":\"target.log\"},"
  fi
  for pair in "${TARGET_TOMCAT_PROPERTIES[@]}"; do
    knob="${pair%%=*}" property="${pair#*=}"
    name="${TARGET_TOMCAT_LOGGED[$knob]}"
    # Without a pool of its own Tomcat has no thread counts to compare.
    [[ "$effective" == false || ("$name" != maxThreads && "$name" != minSpareThreads) ]] || continue
    set_to="${log_values[$knob]}"
    [[ ! "$set_to" =~ ^[0-9]+$ ]] || set_to=$((10#$set_to))
    if [[ "$name" == minSpareThreads && "$set_to" =~ ^[0-9]+$ && "${log_values[TOMCAT_MAX_THREADS]}" =~ ^[0-9]+$ ]] \
      && ((set_to > 10#${log_values[TOMCAT_MAX_THREADS]})); then
      set_to=$((10#${log_values[TOMCAT_MAX_THREADS]}))
    fi
    [[ "${logged[$name]:-}" != "$set_to" ]] || continue
    mismatches+="{\"property\":\"$property\",\"cell\":$(_target_json_value "$set_to"),\"effective\":$(_target_json_value "${logged[$name]:-}"),\"source\":\"target.log\"},"
  done
  printf '{"checked":true,"reason":null,"source":"target.log","mismatches":[%s]}\n' "${mismatches%,}"
}

# _target_json_value VALUE: VALUE as JSON: a number as it is, empty as null,
# anything else a string.
_target_json_value() {
  local value="$1"
  if [[ "$value" =~ ^-?[0-9]+$ ]]; then
    printf '%s' "$value"
  elif [[ -z "$value" ]]; then
    printf 'null'
  else
    value="${value//\\/\\\\}"
    printf '"%s"' "${value//\"/\\\"}"
  fi
}

# target_check_threads CELL_ASSOC: whether Tomcat runs on virtual threads as
# the cell asked (TOMCAT_VIRTUAL_THREADS): Tomcat's ThreadPool MBean reports
# maxThreads -1 when its executor is not a thread pool (AbstractEndpoint.
# getMaxThreads(): Spring Boot's virtual-thread executor), so the actuator's
# tomcat.threads.config.max is -1 with virtual threads and the pool's size
# without. Prints a JSON list of mismatches [{property, cell, effective}]:
# empty when it applied; a cell that asked for virtual threads and cannot
# show them gets one too (never taken on trust). Nothing for TARGET_CMD.
target_check_threads() {
  local -n threads_values="$1"
  local want=false answer status=0 value effective
  [[ "$(target_kind threads_values)" != cmd ]] || { printf '[]\n'; return 0; }
  [[ "${threads_values[TOMCAT_VIRTUAL_THREADS]:-0}" != 1 ]] || want=true
  answer="$(netns_exec server curl -sS --max-time 5 \
    "http://127.0.0.1:${threads_values[MANAGEMENT_PORT]}/actuator/metrics/tomcat.threads.config.max" 2>/dev/null)" || status=$?
  # The first measurement's value ({"measurements":[{"statistic":"VALUE","value":200.0}]}),
  # read by the shell: a jq start costs 20 ms of CPU beside a JVM just started.
  value=""
  local measured='"measurements"[[:space:]]*:[[:space:]]*\[[^]]*"value"[[:space:]]*:[[:space:]]*(-?[0-9][0-9.]*([eE][-+]?[0-9]+)?)'
  if ((status == 0)) && [[ "$answer" =~ $measured ]]; then
    value="${BASH_REMATCH[1]}"
  fi
  case "$value" in
    -1 | -1.0) effective=true ;;
    '') effective="unknown (no tomcat.threads.config.max on 127.0.0.1:${threads_values[MANAGEMENT_PORT]})" ;;
    *) effective="false (a pool of ${value%.0} threads)" ;;
  esac
  # The first word: true, false (a pool of N threads) or unknown (why).
  if [[ "${effective%% *}" == "$want" || ("$want" == false && "$effective" == unknown*) ]]; then
    printf '[]\n'
  else
    jq -nc --arg cell "$want" --arg effective "$effective" \
      '[{property: "spring.threads.virtual.enabled", cell: $cell, effective: $effective,
        source: "/actuator/metrics/tomcat.threads.config.max"}]'
  fi
}

# _target_check_connector_props CELL_ASSOC: target_check_connector's
# configprops part.
_target_check_connector_props() {
  local -n check_values="$1"
  local expected pair value answer code threads port="${check_values[MANAGEMENT_PORT]}"
  if [[ "$(target_kind check_values)" == cmd ]]; then
    jq -n '{checked: false, reason: "TARGET_CMD is not a Spring Boot target", mismatches: []}'
    return
  fi
  # {"server.tomcat.accept-count": 100, ...}: the knobs are whole numbers (their
  # types); one that is not makes the JSON, and so the check, fail.
  expected="$(for pair in "${TARGET_TOMCAT_PROPERTIES[@]}"; do
    value="${check_values[${pair%%=*}]}"
    [[ ! "$value" =~ ^[0-9]+$ ]] || value=$((10#$value))
    printf '"%s": %s\n' "${pair#*=}" "$value"
  done | paste -sd, | sed 's/^/{/; s/$/}/')"
  answer="$(target_configprops "$port" server)"
  code="${answer##*$'\n'}"
  [[ "$code" != 404 ]] || { answer="$(target_configprops "$port" "")" && code="${answer##*$'\n'}"; }
  # The thread pool's kind once the actuator answers, its mismatches in the same jq.
  threads="$(target_check_threads check_values)"
  if [[ "$code" == 200 ]]; then
    jq -c --argjson expected "$expected" --argjson threads "${threads:-[]}" --arg source /actuator/configprops -f "$LT_ROOT/scripts/lib/connector.jq" \
      <<<"${answer%$'\n'*}" 2>/dev/null && return 0
    code=invalid
  fi
  jq -nc --arg port "$port" --arg code "$code" --argjson wait "$TARGET_CHECK_WAIT_S" --argjson threads "${threads:-[]}" \
    --arg exposure "${check_values[TARGET_ACTUATOR]:-needed}" '{checked: false, mismatches: $threads, source: "/actuator/configprops", status: $code,
    reason: (if $code == "404" and $exposure == "as-is" then "the application does not expose /actuator/configprops on its actuator port 127.0.0.1:\($port) (TARGET_ACTUATOR=as-is keeps its own exposure; add configprops to management.endpoints.web.exposure.include, or leave TARGET_ACTUATOR at needed, to have its connector checked)"
      elif $code == "404" then "the application answers 404 for /actuator/configprops on 127.0.0.1:\($port) although the suite exposed it there (TARGET_ACTUATOR=needed): the endpoint is turned off in the application (management.endpoint.configprops.enabled or .access), or it has no actuator"
      elif $code == "401" or $code == "403" or $code == "302" then "the check could not be made: the actuator is guarded by Spring Security (or another filter of the application'"'"'s): /actuator/configprops on 127.0.0.1:\($port) answered HTTP \($code); permit the actuator on its own port (EndpointRequest.toAnyEndpoint()) to have the connector checked and busy threads sampled"
      elif $code == "500" then "the check could not be made: the application maps the actuator'"'"'s answer to an error (/actuator/configprops on 127.0.0.1:\($port) answered HTTP 500, an exception handler of its own, as for a path it does not know)"
      elif $code == "000" then "the check could not be made: nothing answered /actuator/configprops on 127.0.0.1:\($port) within \($wait) s, or after the application logged that it had started (an application without the actuator has nothing there)"
      elif $code == "invalid" then "the check could not be made: /actuator/configprops on 127.0.0.1:\($port) did not answer JSON"
      else "the check could not be made: /actuator/configprops on 127.0.0.1:\($port) answered HTTP \($code)" end)}'
}

# target_configprops PORT PREFIX: GET /actuator/configprops[/PREFIX] on the
# actuator's port, from the server namespace: the body, then a line with the
# HTTP status (000: no answer). The port may not listen yet when the port
# under test already answers (Spring Boot starts the actuator's connector, a
# child context, after the main one: measured on the suite's own target, 3
# starts of 3 refused on the actuator's port right after /health answered),
# so a refused connection is asked again, for up to TARGET_CHECK_WAIT_S, or
# until the target's log (TARGET_LOG) says it started (Spring Boot's
# "Started ... in", logged once the actuator's connector listens, if it has
# one), then once more.
target_configprops() {
  local port="$1" prefix="$2" answer status started=0 deadline=$((SECONDS + TARGET_CHECK_WAIT_S))
  while :; do
    status=0
    answer="$(netns_exec server curl -sS --max-time 5 -w '\n%{http_code}' \
      "http://127.0.0.1:$port/actuator/configprops${prefix:+/$prefix}" 2>/dev/null)" || status=$?
    # 7: could not connect (nothing listens yet).
    ((status == 7 && SECONDS < deadline && started == 0)) || break
    [[ -z "$TARGET_LOG" ]] || ! grep -qE "$TARGET_STARTED_RE" "$TARGET_LOG" 2>/dev/null || started=1
    sleep 0.05
  done
  ((status == 0)) || answer=$'\n000'
  printf '%s\n' "$answer"
}
