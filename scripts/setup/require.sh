#!/usr/bin/env bash
# Summary: check what the suite cannot install itself (Go, Java 17, Maven, npm, root).
# Usage: scripts/setup/require.sh [go] [java] [mvn] [npm] [root]...
set -euo pipefail
LT_PROG=require
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

main() {
  local what missing=()
  for what in "$@"; do
    case "$what" in
      root) [[ $EUID -eq 0 ]] || abort "this needs root (network namespaces, per-namespace sysctls); run it as root" ;;
      go) command -v go >/dev/null || missing+=("Go >= 1.22 (golang)") ;;
      java)
        if ! command -v java >/dev/null; then
          missing+=("Java 17 (openjdk-17-jdk-headless)")
        elif ! java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then
          missing+=("Java >= 17 (found: $(java -version 2>&1 | head -n 1))")
        fi
        ;;
      mvn) command -v mvn >/dev/null || missing+=("Maven (maven)") ;;
      npm) command -v npm >/dev/null || missing+=("Node.js with npm (nodejs npm)") ;;
      *) usage_error "unknown prerequisite '$what'" ;;
    esac
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    local list
    list="$(printf '%s; ' "${missing[@]}")"
    abort "missing prerequisites: ${list%; }. Install them (e.g. apt-get install golang openjdk-17-jdk-headless maven nodejs npm) and run again"
  fi
}

main "$@"
