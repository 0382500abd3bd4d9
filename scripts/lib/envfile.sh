# shellcheck shell=bash
# Summary: parse KEY=VALUE env files as data (never sourced) and check values by type.
#
# An env file is a list of lines: blank, "# comment" or KEY=VALUE. KEY is upper
# case. VALUE is the rest of the line, trimmed; one pair of surrounding quotes
# is removed. Nothing is expanded: "$(cmd)" stays those characters.
# In defaults.env a comment "# type: T" declares the type of the next key.

# envfile_each FILE CALLBACK: call "CALLBACK file line key value" for every
# assignment. While CALLBACK runs, ENVFILE_TYPE holds the "# type:" annotation
# that preceded the key (empty if none). Malformed lines abort with status 2.
# shellcheck disable=SC2094 # SC2094: the file is read once; its name is passed on only for messages
envfile_each() {
  local file="$1" callback="$2"
  local line_no=0 raw line key value type_hint=""
  local -A seen_at=()
  [[ -f "$file" ]] || usage_error "$file: no such file"
  while IFS= read -r raw || [[ -n "$raw" ]]; do
    line_no=$((line_no + 1))
    # A comment from the line's start that is no type hint: nothing to read
    # (most of env/defaults.env's 600 lines; each step below costs a little).
    [[ "$raw" != \#* || "$raw" == *type:* ]] || continue
    line="${raw%$'\r'}"
    line="${line//$'\t'/ }"
    envfile_trim_into line "$line"
    if [[ -z "$line" ]]; then
      continue
    fi
    if [[ "$line" == \#* ]]; then
      if [[ "$line" =~ ^#[[:space:]]*type:[[:space:]]*([^[:space:]]+)[[:space:]]*$ ]]; then
        type_hint="${BASH_REMATCH[1]}"
      fi
      continue
    fi
    if [[ "$line" =~ ^export[[:space:]] ]]; then
      usage_error "$file:$line_no: 'export' is not supported (env files are data, not shell): $line"
    fi
    if [[ ! "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*=(.*)$ ]]; then
      usage_error "$file:$line_no: malformed line (expected KEY=VALUE): $line"
    fi
    key="${BASH_REMATCH[1]}"
    envfile_trim_into value "${BASH_REMATCH[2]}"
    if [[ ! "$key" =~ ^[A-Z][A-Z0-9_]*$ ]]; then
      usage_error "$file:$line_no: $key: keys are upper case (A-Z, 0-9, _)"
    fi
    if [[ -n "${seen_at[$key]:-}" ]]; then
      usage_error "$file:$line_no: $key: set twice (first on line ${seen_at[$key]})"
    fi
    seen_at[$key]="$line_no"
    envfile_unquote_into value "$file" "$line_no" "$key" "$value" || exit "$EX_USAGE"
    ENVFILE_TYPE="$type_hint"
    "$callback" "$file" "$line_no" "$key" "$value"
    type_hint=""
  done <"$file"
  ENVFILE_TYPE=""
}

# envfile_load_typed FILE KEYS TYPES VALUES: read a file in which every key
# has a "# type:" comment and a default of that type, into the array KEYS
# (file order) and the associative arrays TYPES and VALUES (names, emptied
# first). env/defaults.env and env/fanout.env are read this way.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
envfile_load_typed() {
  _ENVFILE_INTO=("$2" "$3" "$4")
  local -n typed_keys="$2" typed_types="$3" typed_values="$4"
  typed_keys=()
  typed_types=()
  typed_values=()
  envfile_each "$1" _envfile_add_typed
}

# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
_envfile_add_typed() {
  local file="$1" line_no="$2" key="$3" value="$4" why
  local -n add_keys="${_ENVFILE_INTO[0]}" add_types="${_ENVFILE_INTO[1]}" add_values="${_ENVFILE_INTO[2]}"
  [[ -n "$ENVFILE_TYPE" ]] || usage_error "$file:$line_no: $key: no '# type:' comment before it"
  # Asked with its words discarded first: a command substitution is a fork,
  # and env/defaults.env has over a hundred values (0.13 s of forks a run).
  if ! envfile_check_type "$ENVFILE_TYPE" "$value" >/dev/null; then
    why="$(envfile_check_type "$ENVFILE_TYPE" "$value")" || true
    usage_error "$file:$line_no: $key: $why"
  fi
  add_keys+=("$key")
  # shellcheck disable=SC2004 # namerefs to associative arrays: $key is a string key
  add_types[$key]="$ENVFILE_TYPE"
  # shellcheck disable=SC2004 # as above
  add_values[$key]="$value"
}

# envfile_exported NAMES: fill the associative array NAMES with the names of
# the exported variables. Only those are overrides (VAR=value on the make
# command line): a shell variable of a script must never be taken for one.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
envfile_exported() {
  local -n exported_names="$1"
  local name
  exported_names=()
  while read -r name; do
    # shellcheck disable=SC2004 # a nameref to an associative array: $name is a string key
    exported_names[$name]=1
  done < <(compgen -e)
}

# envfile_trim STRING: STRING without leading and trailing whitespace.
envfile_trim() {
  local s
  envfile_trim_into s "$1"
  printf '%s' "$s"
}

# envfile_trim_into VAR STRING: envfile_trim's STRING into the caller's VAR,
# in the shell itself: envfile_each reads every line of env/defaults.env
# (about 1,400 with the values) and a command substitution a line was a fork
# each, 0.9-1.6 s before a run's first check (docs/performance.md).
envfile_trim_into() {
  local _tr_s="$2"
  _tr_s="${_tr_s#"${_tr_s%%[![:space:]]*}"}"
  _tr_s="${_tr_s%"${_tr_s##*[![:space:]]}"}"
  printf -v "$1" '%s' "$_tr_s"
}

# envfile_unquote FILE LINE KEY VALUE: VALUE without one pair of matching
# surrounding quotes; a quote left open is an error.
envfile_unquote() {
  local out
  envfile_unquote_into out "$@" || return 1
  printf '%s' "$out"
}

# envfile_unquote_into VAR FILE LINE KEY VALUE: envfile_unquote's answer into
# the caller's VAR (envfile_trim_into says why); fails, saying why, on a quote
# left open.
envfile_unquote_into() {
  # Names of its own, so the caller's VAR (envfile_each's "value") is not one of them.
  local _uq_into="$1" _uq_value="$5" _uq_first _uq_last
  if [[ -z "$_uq_value" ]]; then
    printf -v "$_uq_into" '%s' ""
    return 0
  fi
  _uq_first="${_uq_value:0:1}"
  _uq_last="${_uq_value: -1}"
  if [[ "$_uq_first" == '"' || "$_uq_first" == "'" ]]; then
    if [[ ${#_uq_value} -lt 2 || "$_uq_last" != "$_uq_first" ]]; then
      printf '%s: %s:%s: %s: unterminated quote\n' "${LT_PROG:-${0##*/}}" "$2" "$3" "$4" >&2
      return 1
    fi
    _uq_value="${_uq_value:1:${#_uq_value}-2}"
  fi
  printf -v "$_uq_into" '%s' "$_uq_value"
}

# envfile_check_type TYPE VALUE: succeed if VALUE fits TYPE, otherwise print
# why not and fail. A type ending in "?" also accepts the empty string.
envfile_check_type() {
  local type="$1" value="$2"
  if [[ "$type" == *\? ]]; then
    [[ -z "$value" ]] && return 0
    type="${type%\?}"
  fi
  case "$type" in
    uint)
      envfile_is_number "$value" || { printf "'%s' is not a whole number >= 0%s" "$value" "$(envfile_octal_hint "$value")"; return 1; } ;;
    uint\<=*)
      envfile_check_at_most "${type#uint<=}" "$value" || return 1 ;;
    port)
      envfile_check_port "$value" || return 1 ;;
    count)
      [[ "$value" =~ ^[1-9][0-9]*$ ]] \
        || { printf "'%s' is not a whole number > 0%s" "$value" "$(envfile_octal_hint "$value")"; return 1; } ;;
    auto-or-count)
      [[ "$value" == auto || "$value" =~ ^[1-9][0-9]*$ ]] \
        || { printf "'%s' is not auto or a whole number > 0%s" "$value" "$(envfile_octal_hint "$value")"; return 1; } ;;
    auto-or-uint)
      [[ "$value" == auto ]] || envfile_is_number "$value" \
        || { printf "'%s' is not auto or a whole number >= 0%s" "$value" "$(envfile_octal_hint "$value")"; return 1; } ;;
    linger)
      [[ "$value" == off ]] || envfile_is_number "$value" \
        || { printf "'%s' is not off or a whole number of seconds >= 0%s" "$value" "$(envfile_octal_hint "$value")"; return 1; } ;;
    rate)
      # A share of something, at least 0 and below 1 (NET_LOSS): 0, 0.01, .5.
      [[ "$value" =~ ^(0+(\.[0-9]*)?|0*\.[0-9]+)$ ]] \
        || { printf "'%s' is not a rate at least 0 and below 1, such as 0.01" "$value"; return 1; } ;;
    bool)
      [[ "$value" == 0 || "$value" == 1 ]] || { printf "'%s' is not 0 or 1" "$value"; return 1; } ;;
    duration)
      [[ "$value" =~ ^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$ ]] \
        || { printf "'%s' is not a duration such as 500ms, 10s, 1m30s" "$value"; return 1; } ;;
    duration\>0)
      # A length that cannot be zero (a run's DURATION, a request's timeout, an arrival
      # rate's TIME_UNIT: rates are divided by it): some digit other than 0.
      [[ "$value" =~ ^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$ ]] \
        || { printf "'%s' is not a duration such as 500ms, 10s, 1m30s" "$value"; return 1; }
      [[ "$value" =~ [1-9] ]] || { printf "'%s' is zero: it must be a duration > 0 such as 1s" "$value"; return 1; } ;;
    size)
      [[ "$value" =~ ^[1-9][0-9]*[kKmMgG]?$ ]] \
        || { printf "'%s' is not a size such as 256m or 1g" "$value"; return 1; } ;;
    portrange)
      envfile_check_portrange "$value" || return 1 ;;
    stages)
      envfile_check_stages "$value" || return 1 ;;
    ipv4)
      envfile_check_ipv4 "$value" || return 1 ;;
    url)
      [[ "$value" =~ ^https?://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\])(:[0-9]{1,5})?(/[^[:space:]]*)?$ ]] \
        || { printf "'%s' is not an http(s) URL such as http://127.0.0.1:8080" "$value"; return 1; } ;;
    urlpath)
      # A path and query on the target (TARGET_PATH): from /, no spaces,
      # control characters or fragment (#: a browser's, never sent).
      [[ "$value" == /* && "$value" != *[[:space:][:cntrl:]#]* ]] \
        || { printf "'%s' is not a path on the target (it starts with /, has no space or #), such as /owners?lastName=" "$value"; return 1; } ;;
    word)
      [[ "$value" =~ ^[A-Za-z0-9._:/@+-]+$ ]] \
        || { printf "'%s' has characters other than letters, digits and ._:/@+-" "$value"; return 1; } ;;
    string | words)
      [[ "$value" != *[[:cntrl:]]* ]] || { printf 'control characters are not allowed'; return 1; } ;;
    path)
      envfile_check_path "$value" || return 1 ;;
    scenario)
      envfile_check_scenario "$value" || return 1 ;;
    enum:*)
      local choices="${type#enum:}"
      [[ "|$choices|" == *"|$value|"* ]] \
        || { printf "'%s' is not one of: %s" "$value" "${choices//|/, }"; return 1; } ;;
    *)
      printf "unknown type '%s' (defaults.env is wrong)" "$type"
      return 1 ;;
  esac
}

# envfile_is_number VALUE: a whole number >= 0 written in decimal: 0, or digits
# without a leading zero (bash's arithmetic reads 010 as eight and refuses 08;
# scenarios/lib/env.js's int() refuses them too).
envfile_is_number() {
  [[ "$1" =~ ^(0|[1-9][0-9]*)$ ]]
}

# envfile_octal_hint VALUE: why digits with a leading zero are refused (empty
# for other values).
envfile_octal_hint() {
  [[ "$1" =~ ^0[0-9]+$ ]] || return 0
  local digits="${1#"${1%%[!0]*}"}"
  printf ' (a leading zero reads as octal: write %s)' "${digits:-0}"
}

# envfile_check_port VALUE: a TCP port, 1-65535.
envfile_check_port() {
  local value="$1"
  if [[ "$value" =~ ^[1-9][0-9]{0,4}$ ]] && ((value <= 65535)); then
    return 0
  fi
  printf "'%s' is not a port (1-65535)%s" "$value" "$(envfile_octal_hint "$value")"
  return 1
}

# envfile_check_ipv4 VALUE: a dotted-quad IPv4 address, each number 0-255.
envfile_check_ipv4() {
  local value="$1"
  local octet='(0|[1-9][0-9]{0,2})'
  if [[ "$value" =~ ^$octet\.$octet\.$octet\.$octet$ ]] \
    && ((BASH_REMATCH[1] <= 255 && BASH_REMATCH[2] <= 255 && BASH_REMATCH[3] <= 255 && BASH_REMATCH[4] <= 255)); then
    return 0
  fi
  printf "'%s' is not an IPv4 address (four numbers of 0-255)" "$value"
  return 1
}

# envfile_check_at_most MAX VALUE: a whole number >= 0 and <= MAX (type
# "uint<=MAX": a knob whose consumer refuses more, e.g. DELAY_MS and the
# target's own limit).
envfile_check_at_most() {
  local max="$1" value="$2"
  envfile_is_number "$value" || { printf "'%s' is not a whole number >= 0%s" "$value" "$(envfile_octal_hint "$value")"; return 1; }
  # Compared as digits first: bash's arithmetic wraps above 2^63.
  if [[ ${#value} -gt ${#max} ]] || ((${#value} == ${#max} && value > max)); then
    printf "'%s' is above %s, the most it can be" "$value" "$max"
    return 1
  fi
}

# envfile_check_portrange VALUE: LOW-HIGH with 1 <= LOW < HIGH <= 65535.
envfile_check_portrange() {
  local value="$1"
  if [[ "$value" =~ ^([1-9][0-9]{0,4})-([1-9][0-9]{0,4})$ ]] \
    && ((BASH_REMATCH[1] >= 1 && BASH_REMATCH[1] < BASH_REMATCH[2] && BASH_REMATCH[2] <= 65535)); then
    return 0
  fi
  printf "'%s' is not a port range LOW-HIGH with 1 <= LOW < HIGH <= 65535" "$value"
  return 1
}

# envfile_check_stages VALUE: k6 ramp stages "DURATION:TARGET,DURATION:TARGET".
envfile_check_stages() {
  local value="$1" stage
  local -a stages
  IFS=',' read -r -a stages <<<"$value"
  if [[ -z "$value" || "$value" == *, || ${#stages[@]} -eq 0 ]]; then
    printf "'%s' is not a stage list such as 5s:100,20s:200,5s:0" "$value"
    return 1
  fi
  for stage in "${stages[@]}"; do
    if [[ ! "$stage" =~ ^([0-9]+(\.[0-9]+)?(ms|s|m|h))+:(0|[1-9][0-9]*)$ ]]; then
      printf "stage '%s' of '%s' is not DURATION:TARGET (e.g. 5s:100)" "$stage" "$value"
      return 1
    fi
  done
}

# envfile_check_path VALUE: a readable regular file (relative to the current
# directory).
envfile_check_path() {
  local value="$1"
  if [[ ! -e "$value" ]]; then
    printf "'%s' does not exist (relative paths are taken from %s)" "$value" "$PWD"
    return 1
  fi
  [[ -f "$value" && -r "$value" ]] || { printf "'%s' is not a readable file" "$value"; return 1; }
}

# envfile_scenario_names: the scenarios shipped under scenarios/, by name.
envfile_scenario_names() {
  local file
  for file in "$LT_ROOT"/scenarios/*.js; do
    file="${file##*/}"
    printf '%s\n' "${file%.js}"
  done | LC_ALL=C sort
}

# envfile_check_scenario VALUE: the name of a shipped scenario, or a k6
# script of one's own (a path to an existing .js file).
envfile_check_scenario() {
  local value="$1" names
  if ! k6_own_script "$value"; then
    [[ "$value" =~ ^[a-z0-9-]+$ && -f "$LT_ROOT/scenarios/$value.js" ]] && return 0
    names="$(envfile_scenario_names | paste -sd, | sed 's/,/, /g')"
    printf "'%s' is not one of: %s (or a k6 script of your own: a path to a .js file)" "$value" "$names"
    return 1
  fi
  [[ "$value" == *.js ]] || { printf "'%s' is not a k6 script (a .js file)" "$value"; return 1; }
  envfile_check_path "$value"
}
