#!/usr/bin/env bash
# Summary: install pinned awscli 1.x, moto[server] 5.x and PyYAML into a Python venv at .tools/venv.
# Usage: scripts/setup/install-aws-tools.sh
#
# The fan-out (scripts/ssm-fanout.sh) drives AWS through the real AWS CLI; its
# tests point that CLI at moto's server on 127.0.0.1 and read the k6-operator
# manifest back with PyYAML. A venv of the project's own keeps those versions
# fixed whatever Python packages the machine has.
set -euo pipefail
LT_PROG=install-aws-tools
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

readonly PACKAGES=(awscli==1.46.3 "moto[server]==5.2.5" PyYAML==6.0.3)

main() {
  local venv="$LT_ROOT/.tools/venv" stamp
  stamp="$venv/.installed-$(printf '%s_' "${PACKAGES[@]}" | tr -c 'A-Za-z0-9._=-' '_')"
  [[ -e "$stamp" ]] && return 0
  command -v python3 >/dev/null || abort "python3 not found; install it (apt-get install python3 python3-venv)"
  if [[ ! -x "$venv/bin/python" ]]; then
    ensure_venv_module
    say "creating a Python venv in ${venv#"$LT_ROOT"/}"
    python3 -m venv "$venv" >&2 || abort "python3 -m venv $venv failed"
  fi
  say "installing ${PACKAGES[*]} with pip"
  "$venv/bin/python" -m pip install --quiet "${PACKAGES[@]}" >&2 \
    || abort "pip install ${PACKAGES[*]} failed"
  "$venv/bin/aws" --version >&2
  rm -f "$venv"/.installed-*
  touch "$stamp"
}

# ensure_venv_module: Debian's python3 ships venv (with ensurepip) in a
# separate package; install it when missing and allowed to.
ensure_venv_module() {
  python3 -c 'import ensurepip, venv' 2>/dev/null && return 0
  if command -v apt-get >/dev/null && [[ $EUID -eq 0 ]]; then
    say "installing python3-venv with apt-get"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2 \
      || abort "apt-get install python3-venv failed"
    return 0
  fi
  abort "python3 has no venv module; install it (apt-get install python3-venv)"
}

main "$@"
