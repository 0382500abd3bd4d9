#!/usr/bin/env bash
# Summary: install pinned bats-core, bats-support and bats-assert into .tools/bats.
# Usage: scripts/setup/install-bats.sh
set -euo pipefail
LT_PROG=install-bats
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

readonly PACKAGES=(bats@1.13.0 bats-support@0.3.0 bats-assert@2.2.4)

main() {
  local prefix="$LT_ROOT/.tools/bats" stamp
  stamp="$prefix/.installed-$(printf '%s_' "${PACKAGES[@]}")"
  [[ -e "$stamp" ]] && return 0
  "$LT_ROOT/scripts/setup/require.sh" npm
  say "installing ${PACKAGES[*]} with npm"
  mkdir -p "$prefix"
  npm install --silent --no-save --no-package-lock --prefix "$prefix" "${PACKAGES[@]}" >&2 \
    || abort "npm install ${PACKAGES[*]} failed"
  touch "$stamp"
}

main "$@"
