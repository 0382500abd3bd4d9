# shellcheck shell=bash
# Summary: the two network namespaces of a cell (server and client) on a veth pair.
#
# Each cell gets fresh namespaces: counters start at zero, sysctls start at the
# kernel's namespace defaults, and no TIME-WAIT socket leaks into the next cell.

readonly NETNS_SERVER="ltsuite-srv"
readonly NETNS_CLIENT="ltsuite-cli"
readonly NETNS_VETH_SERVER="ltsuite-s0"
readonly NETNS_VETH_CLIENT="ltsuite-c0"
# 1 when the target is external (TARGET_URL): the client side is then the
# host itself and there is no server side.
NETNS_HOST_MODE=0

# netns_up SERVER_ADDR CLIENT_ADDRS [SERVER_PID]: create both namespaces and
# link them; CLIENT_ADDRS is one address or several, separated by spaces. With SERVER_PID (the compose backend's container), the server
# side is that process's own network namespace, given the server name with
# `ip netns attach` instead of being created: everything that runs "in the
# server namespace" then runs in the container's.
netns_up() {
  local server_addr="$1" client_addr="$2" server_pid="${3:-}" addr both server client
  # Three ip processes (ip -batch, its commands from a here-string: no
  # process of the shell's own), one for both namespaces and the veth pair,
  # one a side: nine before, a few ms each as a cell starts.
  if [[ -n "$server_pid" ]]; then
    printf -v both 'netns attach %s %s\n' "$NETNS_SERVER" "$server_pid"
  else
    printf -v both 'netns add %s\n' "$NETNS_SERVER"
  fi
  printf -v both '%snetns add %s\nlink add %s netns %s type veth peer name %s netns %s' "$both" "$NETNS_CLIENT" \
    "$NETNS_VETH_SERVER" "$NETNS_SERVER" "$NETNS_VETH_CLIENT" "$NETNS_CLIENT"
  printf -v server 'addr add %s/24 dev %s\nlink set lo up\nlink set %s up' "$server_addr" "$NETNS_VETH_SERVER" \
    "$NETNS_VETH_SERVER"
  # Several client addresses (CLIENT_ADDRESSES): each has its own ephemeral
  # ports towards the server's address and port.
  client=""
  for addr in $client_addr; do
    printf -v client '%saddr add %s/24 dev %s\n' "$client" "$addr" "$NETNS_VETH_CLIENT"
  done
  printf -v client '%slink set lo up\nlink set %s up' "$client" "$NETNS_VETH_CLIENT"
  # Each only after the one before succeeded (a caller's `if` turns errexit off).
  ip -batch - <<<"$both" \
    && ip -n "$NETNS_SERVER" -batch - <<<"$server" \
    && ip -n "$NETNS_CLIENT" -batch - <<<"$client"
}

# netns_client_addresses FIRST COUNT: COUNT consecutive IPv4 addresses from
# FIRST, space-separated; fails if they would leave FIRST's /24.
netns_client_addresses() {
  local first="$1" count="$2" prefix last i
  prefix="${first%.*}"
  last="${first##*.}"
  ((last + count - 1 <= 254)) || return 1
  for ((i = 0; i < count; i++)); do
    printf '%s%s.%s' "$([[ $i -gt 0 ]] && printf ' ')" "$prefix" "$((last + i))"
  done
  printf '\n'
}

# netns_down: remove both namespaces if they exist (the veth pair goes with them).
netns_down() {
  local ns
  for ns in "$NETNS_SERVER" "$NETNS_CLIENT"; do
    if netns_exists "$ns"; then
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
}

# netns_exists NAME: succeed if the namespace NAME exists.
netns_exists() {
  [[ -e "/run/netns/$1" ]]
}

# netns_exec SIDE COMMAND...: run COMMAND in the server or client namespace
# (in host mode: the client side runs on the host, the server side fails).
netns_exec() {
  local side="$1"
  shift
  if [[ "$NETNS_HOST_MODE" == 1 ]]; then
    [[ "$side" == client ]] || return 1
    "$@"
    return
  fi
  ip netns exec "$(netns_name "$side")" "$@"
}

# netns_prefix SIDE: the words that run a command on SIDE, one per line
# (nothing in host mode), for callers that must exec the command.
netns_prefix() {
  [[ "$NETNS_HOST_MODE" == 1 ]] && return 0
  printf '%s\n' ip netns exec "$(netns_name "$1")"
}

# The suite's own sockets in the client namespace (the runner's health
# checks, k6's web dashboard) take ports outside its ephemeral range
# (net.ipv4.ip_local_port_range): a port in the range is one fewer for the
# users where the range is the limit (the port wall), for 60 s after a
# check's TIME-WAIT towards the same address and port, and for the whole
# load under a listener (__inet_hash_connect() skips a port bound by bind()).
# 512: each health check that got an answer holds its port 60 s (TIME-WAIT),
# and the runner asks every 50 ms, for TARGET_HEALTH_GRACE_S while it hears 404.
readonly NETNS_OWN_PORTS=512

# netns_ports_outside LOW HIGH COUNT: "FROM TO", COUNT ports just below the
# range LOW-HIGH, or just above it when there is no room below (1-65535);
# nothing when neither side has room.
netns_ports_outside() {
  local low="$1" high="$2" count="$3"
  if ((low - count >= 1)); then
    printf '%s %s\n' "$((low - count))" "$((low - 1))"
  elif ((high + count <= 65535)); then
    printf '%s %s\n' "$((high + 1))" "$((high + count))"
  fi
}

# netns_own_ports: "FROM TO", the client namespace's ports for the suite's
# own sockets (NETNS_OWN_PORTS outside its ephemeral range, as it reports
# it); nothing in host mode (the host's ports are everyone's) or when the
# range leaves no room.
netns_own_ports() {
  [[ "$NETNS_HOST_MODE" != 1 ]] || return 0
  local low="" high=""
  read -r low high < <(netns_exec client sysctl -n net.ipv4.ip_local_port_range 2>/dev/null) || true
  [[ "$low" =~ ^[0-9]+$ && "$high" =~ ^[0-9]+$ ]] || return 0
  netns_ports_outside "$low" "$high" "$NETNS_OWN_PORTS"
}

# netns_curl_ports SIDE: curl's options for a request of the suite's own from
# SIDE, one a line: in the client namespace, a local port outside its
# ephemeral range (all of the own ports but the last, k6_dashboard_port's).
netns_curl_ports() {
  [[ "$1" == client ]] || return 0
  local from="" to=""
  read -r from to < <(netns_own_ports) || true
  [[ -n "$from" ]] || return 0
  printf '%s\n' --local-port "$from-$((to - 1))"
}

# netns_name SIDE: the namespace of "server" or "client".
netns_name() {
  case "$1" in
    server) printf '%s\n' "$NETNS_SERVER" ;;
    client) printf '%s\n' "$NETNS_CLIENT" ;;
    *) abort "netns_name: unknown side '$1'" ;;
  esac
}

# netns_apply_sysctls CELL_ENV_ASSOC: write every non-empty whitelisted sysctl
# of the cell into its namespace. The host is never touched. One sysctl
# process a side; when it fails, each setting is written alone to name the
# one the kernel refused. On failure the reason is in CELL_ERROR.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
netns_apply_sysctls() {
  local -n cell_values="$1"
  local key side value setting
  local -A settings_of=()
  for key in "${!SYSCTL_SIDE[@]}"; do
    side="${SYSCTL_SIDE[$key]}"
    value="${cell_values[$key]:-}"
    [[ -n "$value" && ( "$side" == server || "$side" == client ) ]] || continue
    # ip_local_port_range is written as "LOW HIGH"; the env file says LOW-HIGH.
    [[ "$key" == *PORT_RANGE ]] && value="${value/-/ }"
    settings_of[$side]+="${SYSCTL_NAME[$key]}=$value"$'\n'
  done
  for side in "${!settings_of[@]}"; do
    local -a settings=()
    mapfile -t settings <<<"${settings_of[$side]%$'\n'}"
    netns_exec "$side" sysctl -q -w "${settings[@]}" >/dev/null 2>&1 && continue
    for setting in "${settings[@]}"; do
      if ! netns_exec "$side" sysctl -q -w "$setting" >/dev/null; then
        cell_error "cannot set $setting in the $side namespace"
        return 1
      fi
    done
  done
}

# netns_read_sysctls: print "side<TAB>sysctl<TAB>value" for every whitelisted
# per-namespace sysctl as the kernel reports it (the effective values), in
# the order of their keys; "unavailable" for one the kernel does not have.
# One sysctl process a side (it prints "name = value" for each it can read).
netns_read_sysctls() {
  local key side name line value
  local -a keys names
  local -A names_of=() value_of=()
  mapfile -t keys < <(printf '%s\n' "${!SYSCTL_SIDE[@]}" | sort)
  for key in "${keys[@]}"; do
    side="${SYSCTL_SIDE[$key]}"
    [[ "$side" == server || "$side" == client ]] || continue
    names_of[$side]+="${SYSCTL_NAME[$key]} "
  done
  for side in "${!names_of[@]}"; do
    read -r -a names <<<"${names_of[$side]}"
    while IFS= read -r line; do
      [[ "$line" == *" = "* ]] || continue
      value_of[$side/${line%% = *}]="${line#* = }"
    done < <(netns_exec "$side" sysctl "${names[@]}" 2>/dev/null || true)
  done
  for key in "${keys[@]}"; do
    side="${SYSCTL_SIDE[$key]}"
    name="${SYSCTL_NAME[$key]}"
    [[ "$side" == server || "$side" == client ]] || continue
    value="${value_of[$side/$name]-unavailable}"
    printf '%s\t%s\t%s\n' "$side" "$name" "${value//$'\t'/ }"
  done
}

# The delayer between the two namespaces (NET_RTT_MS, NET_LOSS) goes with them.
# shellcheck source=scripts/lib/netdelay.sh
source "$(dirname "${BASH_SOURCE[0]}")/netdelay.sh"
# The proxy in the server namespace (PROXY=nginx) goes with them too.
# shellcheck source=scripts/lib/proxy.sh
source "$(dirname "${BASH_SOURCE[0]}")/proxy.sh"
