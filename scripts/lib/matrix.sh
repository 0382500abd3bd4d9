# shellcheck shell=bash
# Summary: knobs (from env/defaults.env), layering and matrix expansion into cells.
#
# Layers, lowest first: env/defaults.env < the matrix file < overrides (the
# environment, i.e. VAR=value on the make command line). A value with several
# space-separated words is an axis; the cells are the cartesian product of the
# axes in the order they first appear (the first axis changes slowest).

# Filled by knobs_load.
declare -ga KNOB_ORDER=()
declare -gA KNOB_TYPE=() KNOB_DEFAULT=()
# Filled by sysctls_load: key -> side / sysctl name.
declare -gA SYSCTL_SIDE=() SYSCTL_NAME=()
# Filled by matrix_load and matrix_apply_overrides.
declare -ga AXIS_KEYS=()
declare -gA MATRIX_VALUE=() MATRIX_ORIGIN=()
# Digits of a cell's number in its id (matrix_cell_id); empty: those of the
# cell count, at least two. A resumed run keeps its own (run_keep_id_width).
MATRIX_ID_WIDTH="${MATRIX_ID_WIDTH:-}"

# knobs_load DEFAULTS_FILE: read every knob, its default and its type.
knobs_load() {
  envfile_load_typed "$1" KNOB_ORDER KNOB_TYPE KNOB_DEFAULT
}

# sysctls_load TSV: read the whitelist of kernel settings (key side sysctl).
sysctls_load() {
  local key side name rest
  SYSCTL_SIDE=()
  SYSCTL_NAME=()
  while read -r key side name rest; do
    [[ -z "$key" || "$key" == \#* ]] && continue
    SYSCTL_SIDE[$key]="$side"
    SYSCTL_NAME[$key]="$name"
  done <"$1"
}

# matrix_init: start from the defaults (every knob a single value).
matrix_init() {
  local key
  AXIS_KEYS=()
  MATRIX_VALUE=()
  MATRIX_ORIGIN=()
  for key in "${KNOB_ORDER[@]}"; do
    MATRIX_VALUE[$key]="${KNOB_DEFAULT[$key]}"
    MATRIX_ORIGIN[$key]="defaults"
  done
}

# matrix_load FILE: layer a matrix file over what is there.
matrix_load() {
  envfile_each "$1" _matrix_set
}

_matrix_set() {
  local file="$1" line_no="$2" key="$3" value="$4"
  matrix_set "$file:$line_no" "$key" "$value"
}

# matrix_apply_overrides: layer every knob that is exported in the environment.
matrix_apply_overrides() {
  local key
  local -A exported=()
  envfile_exported exported
  for key in "${KNOB_ORDER[@]}"; do
    if [[ -n "${exported[$key]:-}" ]]; then
      matrix_set "command line" "$key" "${!key}"
    fi
  done
}

# matrix_resolve FILE [OVERRIDE...]: the whole layering for a run: defaults,
# sysctl whitelist, the matrix FILE, then the overrides: the environment's,
# or, when OVERRIDE words ("KEY=VALUE", e.g. those a run recorded) follow,
# exactly those.
matrix_resolve() {
  local file="$1" override
  shift
  knobs_load "$LT_ROOT/env/defaults.env"
  sysctls_load "$LT_ROOT/env/sysctls.tsv"
  matrix_init
  matrix_load "$file"
  if [[ $# -eq 0 ]]; then
    matrix_apply_overrides
    return
  fi
  for override in "$@"; do
    if [[ -n "$override" ]]; then
      matrix_set "command line" "${override%%=*}" "${override#*=}"
    fi
  done
}

# matrix_overrides: "KEY=VALUE" for every knob set on the command line, one a
# line (what a manifest records, so a resumed run gets the same cells).
matrix_overrides() {
  local key
  for key in "${KNOB_ORDER[@]}"; do
    if [[ "${MATRIX_ORIGIN[$key]}" == "command line" ]]; then
      printf '%s=%s\n' "$key" "${MATRIX_VALUE[$key]}"
    fi
  done
}

# matrix_set WHERE KEY VALUE: check one assignment and record it; WHERE names
# its origin in messages ("file:line" or "command line").
matrix_set() {
  local where="$1" key="$2" value="$3" word why
  local -a words=()
  if [[ "${SYSCTL_SIDE[$key]:-}" == global ]]; then
    usage_error "$where: $key: ${SYSCTL_NAME[$key]} is global to the host, not per network namespace; the suite changes only settings of the namespaces it creates, never the host's"
  fi
  if [[ -z "${KNOB_TYPE[$key]:-}" ]]; then
    usage_error "$where: $key: unknown key (every knob is listed in env/defaults.env)"
  fi
  # A list of words (a command, its arguments) is one value, never an axis.
  if [[ "${KNOB_TYPE[$key]}" == words* ]]; then
    words=("$(envfile_trim "$value")")
    [[ -n "${words[0]}" ]] || words=()
  else
    read -r -a words <<<"$value"
  fi
  if [[ ${#words[@]} -eq 0 ]]; then
    if [[ "${KNOB_TYPE[$key]}" != *\? ]]; then
      usage_error "$where: $key: no value given"
    fi
    words=("")
  fi
  local i
  for i in "${!words[@]}"; do
    word="${words[i]}"
    # Its words only when it does not fit (no fork for a value that does).
    if ! envfile_check_type "${KNOB_TYPE[$key]}" "$word" >/dev/null; then
      why="$(envfile_check_type "${KNOB_TYPE[$key]}" "$word")" || true
      usage_error "$where: $key: $why"
    fi
    if matrix_names_file "${KNOB_TYPE[$key]}" "$word"; then
      words[i]="$(matrix_absolute_path "${KNOB_TYPE[$key]}" "$word")"
    fi
  done
  _matrix_remove_axis "$key"
  if [[ ${#words[@]} -gt 1 ]]; then
    AXIS_KEYS+=("$key")
  fi
  MATRIX_VALUE[$key]="${words[*]}"
  MATRIX_ORIGIN[$key]="$where"
}

# matrix_absolute_path TYPE VALUE: VALUE, made absolute when it names a file
# (a path, or a scenario given as a script of one's own), so every cell and
# the processes it starts find it wherever they run.
matrix_absolute_path() {
  local value="$2"
  if matrix_names_file "$1" "$value"; then
    value="$(cd "$(dirname "$value")" && pwd)/$(basename "$value")"
  fi
  printf '%s' "$value"
}

# matrix_names_file TYPE VALUE: succeed when VALUE of a knob of TYPE names a
# file (matrix_absolute_path makes it absolute; other values are kept as they
# are, with no process started for them).
matrix_names_file() {
  local type="${1%\?}"
  [[ -n "$2" ]] || return 1
  [[ "$type" == path ]] || { [[ "$type" == scenario ]] && k6_own_script "$2"; }
}

_matrix_remove_axis() {
  local key="$1" k
  local -a kept=()
  for k in "${AXIS_KEYS[@]}"; do
    [[ "$k" == "$key" ]] || kept+=("$k")
  done
  AXIS_KEYS=("${kept[@]}")
}

# matrix_cell_count: number of cells (product of the axis lengths).
matrix_cell_count() {
  local key count=1
  local -a words
  for key in "${AXIS_KEYS[@]}"; do
    read -r -a words <<<"${MATRIX_VALUE[$key]}"
    count=$((count * ${#words[@]}))
  done
  printf '%s\n' "$count"
}

# matrix_cell_values INDEX: print "KEY=VALUE" for every knob of cell INDEX
# (0-based), in defaults order.
matrix_cell_values() {
  local index="$1" key
  local -A chosen=()
  _matrix_choose "$index" chosen
  for key in "${KNOB_ORDER[@]}"; do
    if [[ -v "chosen[$key]" ]]; then
      printf '%s=%s\n' "$key" "${chosen[$key]}"
    else
      printf '%s=%s\n' "$key" "${MATRIX_VALUE[$key]}"
    fi
  done
}

# matrix_cell_id INDEX: a readable, file-name-safe id such as
# "03_accept_count-5_somaxconn-2" (axis values only; "01" without axes).
# The number has as many digits as the cell count (at least two:
# MATRIX_ID_WIDTH), so the ids sort by name in cell order ("011" before
# "100").
matrix_cell_id() {
  local index="$1" key name value id width="$MATRIX_ID_WIDTH"
  local -A chosen=()
  _matrix_choose "$index" chosen
  if [[ -z "$width" ]]; then
    local count=1
    local -a words
    for key in "${AXIS_KEYS[@]}"; do
      read -r -a words <<<"${MATRIX_VALUE[$key]}"
      count=$((count * ${#words[@]}))
    done
    width="${#count}"
    ((width >= 2)) || width=2
  fi
  printf -v id '%0*d' "$width" "$((index + 1))"
  for key in "${AXIS_KEYS[@]}"; do
    name="${key#TOMCAT_}"
    name="${name,,}"
    value="${chosen[$key]//[^A-Za-z0-9.]/.}"
    id+="_${name}-${value}"
  done
  printf '%s\n' "$id"
}

# _matrix_choose INDEX ARRAY_NAME: fill ARRAY_NAME with the axis values of a
# cell, the last axis changing fastest.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
_matrix_choose() {
  local index="$1" i key
  local -n out="$2"
  local -a words
  for ((i = ${#AXIS_KEYS[@]} - 1; i >= 0; i--)); do
    key="${AXIS_KEYS[$i]}"
    read -r -a words <<<"${MATRIX_VALUE[$key]}"
    # shellcheck disable=SC2004 # out is associative: $key is a string key
    out[$key]="${words[index % ${#words[@]}]}"
    index=$((index / ${#words[@]}))
  done
}
