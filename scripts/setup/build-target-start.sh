#!/usr/bin/env bash
# Summary: extract the target jar and train a class-data-sharing archive for it (faster restarts).
# Usage: scripts/setup/build-target-cds.sh
#
# The archive is valid only for the exact class path it was trained with, so
# the runner starts the extracted jar from the same place. A stale or
# mismatched archive is ignored by the JVM (-Xshare:auto), never fatal.
set -euo pipefail
LT_PROG=build-target-cds
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

main() {
  local jar="$LT_ROOT/server/target/loadtest-target.jar"
  local out="$LT_ROOT/server/target/cds"
  [[ -f "$jar" ]] || abort "$jar not built; run 'make tools'"
  rm -rf "$out"
  mkdir -p "$out"
  java -Djarmode=tools -jar "$jar" extract --destination "$out/app" >/dev/null \
    || abort "cannot extract $jar"
  say "training the class-data-sharing archive (one start of the target)"
  # Ports 0: the training start must not collide with anything listening.
  # The class path must be the absolute one the runner uses, or the JVM
  # refuses the archive.
  # The archive is written last, so its presence means training finished.
  (
    cd "$out"
    SERVER_ADDRESS=127.0.0.1 SERVER_PORT=0 MANAGEMENT_PORT=0 \
      java -XX:ArchiveClassesAtExit=app.jsa.tmp -Dspring.context.exit=onRefresh \
      -jar "$out/app/loadtest-target.jar" >train.log 2>&1
  ) || abort "training run failed; see $out/train.log"
  [[ -s "$out/app.jsa.tmp" ]] || abort "no archive written; see $out/train.log"
  mv "$out/app.jsa.tmp" "$out/app.jsa"
}

main "$@"
