#!/usr/bin/env bash
# Summary: extract the target jar and train its start archives: a class-data-sharing archive for the java on PATH, and an AOT cache when a JDK 25 or later is found.
# Usage: scripts/setup/build-target-start.sh
#
# Each archive comes from one training start of the target (up to a 200 on
# /readyz and /hello, then SIGTERM: the JVM writes the archive as it exits),
# on 127.0.0.1 with free ports. An archive is valid only for the exact class
# path and JVM it was trained with, so the runner starts the extracted jar
# from the same place with the java recorded beside the archive
# (ARCHIVE.java); a stale or mismatched archive is ignored by the JVM, never
# fatal (scripts/lib/target_start.sh chooses the start).
set -euo pipefail
LT_PROG=build-target-start
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=scripts/lib/target.sh
source "$LT_ROOT/scripts/lib/target.sh"

# free_port: a TCP port nothing listens on at 127.0.0.1 (the kernel's choice).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# has_spring_aot JAR: JAR holds the context initializer Spring AOT generated
# at build time (server/pom.xml's process-aot).
has_spring_aot() {
  python3 -c 'import sys, zipfile
sys.exit(not any(n.endswith("__ApplicationContextInitializer.class") for n in zipfile.ZipFile(sys.argv[1]).namelist()))' "$1"
}

# train JAVA FLAG ARCHIVE JAR LOG [JVM_OPTION...]: one training start of JAR
# with JAVA, FLAG=ARCHIVE.tmp and the JVM_OPTIONs (the cells' own: an
# archive serves the classes its training loaded); ARCHIVE and ARCHIVE.java
# when it wrote one.
train() {
  local java="$1" flag="$2" archive="$3" jar="$4" log="$5" port mport pid i ready=0
  shift 5
  port="$(free_port)"
  mport="$(free_port)"
  rm -f "$archive" "$archive.java" "$archive.tmp"
  env -i "PATH=$PATH" "HOME=${HOME:-/root}" SERVER_ADDRESS=127.0.0.1 "SERVER_PORT=$port" \
    MANAGEMENT_ADDRESS=127.0.0.1 "MANAGEMENT_PORT=$mport" \
    MANAGEMENT_ENDPOINT_HEALTH_PROBES_ENABLED=true MANAGEMENT_ENDPOINT_HEALTH_PROBES_ADDADDITIONALPATHS=true \
    "$java" -Xmx512m -Djava.net.preferIPv4Stack=true "$flag=$archive.tmp" "$@" -jar "$jar" >"$log" 2>&1 &
  pid=$!
  for ((i = 0; i < 1200; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    if curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$port/readyz" 2>/dev/null; then
      ready=1
      break
    fi
    sleep 0.1
  done
  if [[ $ready -eq 1 ]]; then
    for i in 1 2 3; do
      curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/hello?delayMs=0" 2>/dev/null || true
      curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/readyz" 2>/dev/null || true
      curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$mport/actuator/metrics/tomcat.threads.busy" 2>/dev/null || true
      curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$mport/actuator/configprops/server" 2>/dev/null || true
    done
  fi
  stop_pid "$pid" "$TARGET_TRAIN_EXIT_S" || true
  wait "$pid" 2>/dev/null || true
  [[ $ready -eq 1 ]] || abort "the training start never answered /readyz; see $log"
  [[ -s "$archive.tmp" ]] || abort "no archive written; see $log"
  mv "$archive.tmp" "$archive"
  printf '%s\n' "$java" >"$archive.java"
}

main() {
  local jar="$TARGET_OWN_JAR" out="$TARGET_START_DIR" java aot_java
  local -a options=()
  [[ -f "$jar" ]] || abort "$jar not built; run 'make tools'"
  java="$(readlink -f "$(command -v java)")" || abort "no java on PATH"
  rm -rf "$out"
  mkdir -p "$out"
  java -Djarmode=tools -jar "$jar" extract --destination "$out/app" >/dev/null \
    || abort "cannot extract $jar"
  # The cells start the jar's Spring AOT code (target_spring_aot); the
  # archives are trained on the same start.
  if has_spring_aot "$out/app/$(basename "$jar")"; then
    options=(-Dspring.aot.enabled=true)
  else
    warn "$jar has no Spring AOT code (server/pom.xml's process-aot): the target starts without it"
  fi
  say "training the class-data-sharing archive (one start of the target, $java)"
  train "$java" -XX:ArchiveClassesAtExit "$out/app.jsa" "$out/app/$(basename "$jar")" "$out/train-cds.log" "${options[@]}"
  aot_java="$(target_aot_java)"
  if [[ -n "$aot_java" ]]; then
    say "training the AOT cache (one start of the target, $aot_java)"
    train "$aot_java" -XX:AOTCacheOutput "$out/app.aot" "$out/app/$(basename "$jar")" "$out/train-aot.log" "${options[@]}"
  else
    say "no JDK 25 or later found: the target starts from the class-data-sharing archive"
  fi
  [[ ${#options[@]} -eq 0 ]] || touch "$out/$TARGET_SPRING_AOT_MARK"
}

main "$@"
