#!/usr/bin/env bash
# Summary: install the Debian packages the suite uses, if any is missing.
# Usage: scripts/setup/install-packages.sh
set -euo pipefail
LT_PROG=install-packages
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

# command -> Debian package
readonly -A PACKAGE_OF=(
  [jq]=jq [curl]=curl [ip]=iproute2 [ss]=iproute2 [nstat]=iproute2
  [flock]=util-linux [shellcheck]=shellcheck [sysctl]=procps [python3]=python3 [iptables]=iptables [nginx]=nginx
)

main() {
  local tool
  local -a wanted=()
  for tool in "${!PACKAGE_OF[@]}"; do
    command -v "$tool" >/dev/null || wanted+=("${PACKAGE_OF[$tool]}")
  done
  [[ ${#wanted[@]} -eq 0 ]] && return 0
  mapfile -t wanted < <(printf '%s\n' "${wanted[@]}" | sort -u)
  command -v apt-get >/dev/null \
    || abort "missing: ${wanted[*]}; install them with your package manager"
  [[ $EUID -eq 0 ]] || abort "missing: ${wanted[*]}; run as root or: sudo apt-get install ${wanted[*]}"
  say "installing ${wanted[*]} with apt-get"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wanted[@]}" >&2 \
    || abort "apt-get install ${wanted[*]} failed"
}

main "$@"
