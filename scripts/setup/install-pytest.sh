#!/usr/bin/env bash
# Summary: install pinned pytest (and pytest-timeout) into the project's Python venv at .tools/venv (for make test-python).
# Usage: scripts/setup/install-pytest.sh
#
# tests/python tests the data model (scripts/ltsuite) with pytest. The venv is
# the one the AWS tools use (install-aws-tools.sh), so one pinned set of
# Python packages serves the tests whatever the machine has.
set -euo pipefail
LT_PROG=install-pytest
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

readonly PACKAGES=(pytest==8.3.4 pytest-timeout==2.4.0)

main() {
  local venv="$LT_ROOT/.tools/venv" stamp
  stamp="$venv/.pytest-$(printf '%s_' "${PACKAGES[@]}" | tr -c 'A-Za-z0-9._=-' '_')"
  [[ -e "$stamp" && -x "$venv/bin/python" ]] && return 0
  command -v python3 >/dev/null || abort "python3 not found; install it (apt-get install python3 python3-venv)"
  if [[ ! -x "$venv/bin/python" ]]; then
    python3 -c 'import ensurepip, venv' 2>/dev/null \
      || abort "python3 has no venv module; install it (apt-get install python3-venv)"
    say "creating a Python venv in ${venv#"$LT_ROOT"/}"
    python3 -m venv "$venv" >&2 || abort "python3 -m venv $venv failed"
  fi
  say "installing ${PACKAGES[*]} with pip"
  "$venv/bin/python" -m pip install --quiet "${PACKAGES[@]}" >&2 \
    || abort "pip install ${PACKAGES[*]} failed"
  "$venv/bin/python" -m pytest --version >&2
  rm -f "$venv"/.pytest-*
  touch "$stamp"
}

main "$@"
