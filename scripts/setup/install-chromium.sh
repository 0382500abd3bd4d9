#!/usr/bin/env bash
# Summary: install Debian's chromium (the browser the report's test opens report.html in) if missing.
# Usage: scripts/setup/install-chromium.sh
set -euo pipefail
LT_PROG=install-chromium
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

readonly CHROMIUM=/usr/bin/chromium

main() {
  [[ -x "$CHROMIUM" ]] && return 0
  command -v apt-get >/dev/null || abort "missing $CHROMIUM; install Debian's chromium package"
  [[ $EUID -eq 0 ]] || abort "missing $CHROMIUM; run as root or: sudo apt-get install chromium"
  say "installing chromium with apt-get"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2 \
    || abort "apt-get install chromium failed"
}

main "$@"
