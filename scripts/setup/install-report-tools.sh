#!/usr/bin/env bash
# Summary: install the report's pinned npm packages (uPlot, inlined into report.html; playwright-core for its browser test) into .tools/report.
# Usage: scripts/setup/install-report-tools.sh
set -euo pipefail
LT_PROG=install-report-tools
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

main() {
  local source_dir="$LT_ROOT/scripts/report" prefix="$LT_ROOT/.tools/report" stamp
  # The lock file pins every package; a changed lock installs again.
  stamp="$prefix/.installed-$(sha256sum "$source_dir/package-lock.json" | cut -c1-16)"
  [[ -e "$stamp" ]] && return 0
  "$LT_ROOT/scripts/setup/require.sh" npm
  say "installing the report's npm packages (scripts/report/package-lock.json)"
  mkdir -p "$prefix"
  cp "$source_dir/package.json" "$source_dir/package-lock.json" "$prefix/"
  # --ignore-scripts: nothing runs at install time (playwright-core never
  # downloads a browser; the test uses Debian's chromium).
  (cd "$prefix" && npm ci --silent --ignore-scripts --no-audit --no-fund >&2) \
    || abort "npm ci in $prefix failed"
  rm -f "$prefix"/.installed-*
  touch "$stamp"
}

main "$@"
