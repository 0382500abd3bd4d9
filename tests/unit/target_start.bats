#!/usr/bin/env bats
# How the target's JVM starts (TARGET_START_MODE): the AOT cache of a JDK 25
# or later, a class-data-sharing archive, or plain java -jar, and the
# archives of a jar of one's own, by its checksum.
# shellcheck disable=SC2034 # SC2034: read by the sourced library under test, or through a nameref

setup() {
  load '../test_helper'
  lt_source_libs envfile netns results target
  # A JDK 25 and a JDK 17 of their own (their release files say which), and
  # the suite's own jar with its start directory, all in the test's dir.
  JDKS="$BATS_TEST_TMPDIR/jdks"
  fake_jdk 25 "25.0.1"
  fake_jdk 17 "17.0.9"
  TARGET_JDK_DIRS="$JDKS"
  PATH="$JDKS/17/bin:$PATH"
  unset JAVA_HOME
  TARGET_OWN_JAR="$BATS_TEST_TMPDIR/own/loadtest-target.jar"
  TARGET_START_DIR="$BATS_TEST_TMPDIR/own/start"
  TARGET_START_CACHE="$BATS_TEST_TMPDIR/cache"
  mkdir -p "$TARGET_START_DIR/app"
  printf 'jar\n' >"$TARGET_OWN_JAR"
  touch -d '1 hour ago' "$TARGET_OWN_JAR"
  : >"$TARGET_START_DIR/app/loadtest-target.jar"
}

# fake_jdk DIR VERSION: JDKS/DIR, a java that prints VERSION like java does.
fake_jdk() {
  mkdir -p "$JDKS/$1/bin"
  printf 'JAVA_VERSION="%s"\n' "$2" >"$JDKS/$1/release"
  printf '#!/bin/sh\necho '"'"'openjdk version "%s" 2025-01-01'"'"' >&2\n' "$2" >"$JDKS/$1/bin/java"
  chmod +x "$JDKS/$1/bin/java"
}

# archive FILE JAVA: a trained archive, made by JAVA.
archive() {
  printf 'archive\n' >"$1"
  printf '%s\n' "$2" >"$1.java"
}

@test "the newest JDK 25 or later is found from its release file; none below 25" {
  run target_aot_java
  assert_output "$JDKS/25/bin/java"
  rm -rf "${JDKS:?}/25"
  TARGET_AOT_JAVA_FOUND=""
  run target_aot_java
  assert_output ""
}

@test "the JDKs are told apart with few processes: a release file read by the shell, one readlink each" {
  [[ $EUID -eq 0 ]] || skip "a PID namespace of its own needs root"
  fake_jdk 21 "21.0.2"
  # A JDK without a release file: its -version says.
  fake_jdk 11 "11.0.20"
  rm "$JDKS/11/release"
  # The first process of a PID namespace of its own: every process started
  # takes the next pid, so /proc/sys/kernel/ns_last_pid counts them.
  # shellcheck disable=SC2016 # SC2016: expanded by the bash that runs it
  run env LT_ROOT="$LT_ROOT" LT_JDK_DIRS="$JDKS" PATH="$PATH" unshare --pid --fork --mount-proc bash -c '
    set -euo pipefail
    source "$LT_ROOT/scripts/lib/common.sh"
    source "$LT_ROOT/scripts/lib/target_start.sh"
    read -r before </proc/sys/kernel/ns_last_pid
    found="$(target_newest_java 21)"
    read -r after </proc/sys/kernel/ns_last_pid
    printf "%s %s %s %s\n" "$found" "$((after - before))" "$(target_java_feature "$LT_JDK_DIRS/11/bin/java")" \
      "$(target_java_feature "$LT_JDK_DIRS/21/bin/java")"'
  assert_success
  local found started eleven twentyone
  read -r found started eleven twentyone <<<"$output"
  [ "$found" = "$JDKS/25/bin/java" ]
  [ "$eleven" = 11 ]
  [ "$twentyone" = 21 ]
  # 5 candidates (PATH's java is JDK 17's, then the 4 JDKs): 2 a candidate
  # (readlink, the substitution that reads the release file), and JDK 11's
  # -version: 15 here; 34 before (6 a candidate: readlink twice, dirname twice, sed).
  [ "$started" -le 16 ] || fail "$started processes to find the newest JDK"
}

@test "auto starts the suite's own jar from the AOT cache, with the java that made it and the extracted copy" {
  archive "$TARGET_START_DIR/app.aot" "$JDKS/25/bin/java"
  archive "$TARGET_START_DIR/app.jsa" "$JDKS/17/bin/java"
  local -A cell=([TARGET_START_MODE]=auto [TARGET_JAVA_OPTS]='-XX:+UseSerialGC' [TARGET_ARGS]='--a=1')
  run target_java_bin cell
  assert_output "$JDKS/25/bin/java"
  run target_java_args cell
  assert_output "$(printf '%s\n' -XX:+UseSerialGC "-XX:AOTCache=$TARGET_START_DIR/app.aot" \
    -jar "$TARGET_START_DIR/app/loadtest-target.jar" --a=1)"
  cell[TARGET_START_MODE]=cds
  run target_java_args cell
  assert_output "$(printf '%s\n' -XX:+UseSerialGC "-XX:SharedArchiveFile=$TARGET_START_DIR/app.jsa" -Xshare:auto \
    -jar "$TARGET_START_DIR/app/loadtest-target.jar" --a=1)"
  run target_java_bin cell
  assert_output "$JDKS/17/bin/java"
}

@test "without a JDK 25 the start falls back to class-data sharing, and says why" {
  archive "$TARGET_START_DIR/app.jsa" "$JDKS/17/bin/java"
  rm -rf "${JDKS:?}/25"
  local -A cell=([TARGET_START_MODE]=aot)
  target_record_start cell "$BATS_TEST_TMPDIR/target-start.txt"
  run cat "$BATS_TEST_TMPDIR/target-start.txt"
  assert_output "$(printf '%s\n' target_start_mode=cds target_java=17.0.9 \
    "target_start_archive=$TARGET_START_DIR/app.jsa" \
    'target_spring_aot=off: no Spring AOT mark newer than the jar (scripts/setup/build-target-start.sh makes it)' \
    'target_start_note=no AOT cache: no JDK 25 or later found')"
}

@test "the suite's own jar starts its Spring AOT code when the build made it, and only with its own settings" {
  archive "$TARGET_START_DIR/app.aot" "$JDKS/25/bin/java"
  touch "$TARGET_START_DIR/spring-aot"
  local -A cell=([TARGET_START_MODE]=auto [TARGET_JAVA_OPTS]='' [TARGET_ARGS]='')
  run target_java_args cell
  assert_output "$(printf '%s\n' "-XX:AOTCache=$TARGET_START_DIR/app.aot" -Dspring.aot.enabled=true \
    -jar "$TARGET_START_DIR/app/loadtest-target.jar")"
  target_record_start cell "$BATS_TEST_TMPDIR/target-start.txt"
  run grep '^target_spring_aot=' "$BATS_TEST_TMPDIR/target-start.txt"
  assert_output target_spring_aot=on
  # A setting of the application's own could change a condition AOT fixed.
  cell[TARGET_ARGS]='--spring.threads.virtual.enabled=true'
  run target_java_args cell
  refute_output --partial -Dspring.aot.enabled
  run target_spring_aot cell
  assert_output --partial 'off: TARGET_ARGS or TARGET_ENV_FILE'
  # A jar rebuilt after the mark: its code may be gone.
  cell[TARGET_ARGS]=''
  touch -d '2 hours ago' "$TARGET_START_DIR/spring-aot"
  run target_spring_aot cell
  assert_output --partial 'off: no Spring AOT mark newer than the jar'
  # A jar of one's own never: its build-time conditions are not the suite's.
  touch "$TARGET_START_DIR/spring-aot"
  cell[TARGET_JAR]="$BATS_TEST_TMPDIR/app.jar"
  run target_spring_aot cell
  assert_output "off: not the suite's own jar"
}

@test "an archive older than the jar, or one whose java is gone, is not used: plain java -jar" {
  archive "$TARGET_START_DIR/app.jsa" "$JDKS/17/bin/java"
  archive "$TARGET_START_DIR/app.aot" "$JDKS/gone/bin/java"
  touch -d '2 hours ago' "$TARGET_START_DIR/app.jsa"
  local -A cell=([TARGET_START_MODE]=auto)
  run target_start_plan cell
  assert_output "$(printf '%s\n' jar java "" "$TARGET_OWN_JAR" \
    "no aot archive newer than the jar (scripts/setup/build-target-start.sh makes it); no cds archive newer than the jar (scripts/setup/build-target-start.sh makes it)")"
  cell[TARGET_START_MODE]=jar
  run target_java_args cell
  assert_output "$(printf '%s\n' -jar "$TARGET_OWN_JAR")"
}

@test "a jar of one's own: its archives live under its checksum, one per set of TARGET_JAVA_OPTS" {
  local jar="$BATS_TEST_TMPDIR/app.jar" sum
  printf 'a jar\n' >"$jar"
  sum="$(sha256sum "$jar" | cut -d' ' -f1)"
  local -A cell=([TARGET_JAR]="$jar" [TARGET_START_MODE]=auto [TARGET_JAVA_OPTS]='')
  run target_archive_path cell aot
  assert_output --regexp "^$TARGET_START_CACHE/$sum/app-[0-9a-f]{12}\.aot\$"
  local plain="$output"
  cell[TARGET_JAVA_OPTS]='-XX:+UseSerialGC'
  run target_archive_path cell aot
  refute_output "$plain"
  # Not trained yet: the jar itself, and the training it needs.
  run target_java_args cell
  assert_output "$(printf '%s\n' -XX:+UseSerialGC -jar "$jar")"
  run target_train_wanted cell
  assert_output aot
  cell[TARGET_START_MODE]=cds
  run target_train_wanted cell
  assert_output cds
  # Trained: the copy and the archive, whatever the jar's age.
  cell[TARGET_START_MODE]=auto
  mkdir -p "$TARGET_START_CACHE/$sum/app"
  : >"$TARGET_START_CACHE/$sum/app/app.jar"
  archive "$(target_archive_path cell aot)" "$JDKS/25/bin/java"
  run target_java_args cell
  assert_output "$(printf '%s\n' -XX:+UseSerialGC "-XX:AOTCache=$(target_archive_path cell aot)" -jar "$TARGET_START_CACHE/$sum/app/app.jar")"
  run target_train_wanted cell
  assert_output ""
}

@test "a training that failed is not tried again, and the start says why it has no archive" {
  local jar="$BATS_TEST_TMPDIR/app.jar"
  printf 'a jar\n' >"$jar"
  local -A cell=([TARGET_JAR]="$jar" [TARGET_START_MODE]=auto [TARGET_JAVA_OPTS]='')
  mkdir -p "$(dirname "$(target_archive_path cell aot)")"
  printf 'target did not answer\n' >"$(target_archive_path cell aot).failed"
  run target_train_wanted cell
  assert_output ""
  run target_start_plan cell
  assert_output "$(printf '%s\n' jar java "" "$jar" \
    "no aot archive: its training start failed (target did not answer); no cds archive yet for this jar")"
}

@test "only a jar of one's own is trained in a cell; a TARGET_CMD gets no JVM start" {
  local -A cell=([TARGET_START_MODE]=auto)
  run target_train_wanted cell
  assert_output ""
  cell[TARGET_CMD]='./server {SERVER_PORT}'
  run target_start_plan cell
  assert_line --index 0 cmd
}

@test "the start's CPU time is read from the running target and added to target-start.txt" {
  printf 'target_start_mode=aot\n' >"$BATS_TEST_TMPDIR/target-start.txt"
  # A target that burns CPU for a moment, then waits.
  bash -c 'i=0; while ((i < 200000)); do ((i++)); done; sleep 30' &
  TARGET_PID=$!
  sleep 1.5
  target_record_start_cpu "$BATS_TEST_TMPDIR/target-start.txt"
  kill "$TARGET_PID"
  run cat "$BATS_TEST_TMPDIR/target-start.txt"
  assert_line --index 0 target_start_mode=aot
  assert_line --index 1 --regexp '^target_start_cpu_s=[0-9]+\.[0-9]{2}$'
  [[ "${lines[1]#*=}" != 0.00 ]]
  # Without a target (TARGET_CMD gone, a compose container): nothing added.
  TARGET_PID=""
  target_record_start_cpu "$BATS_TEST_TMPDIR/target-start.txt"
  run wc -l <"$BATS_TEST_TMPDIR/target-start.txt"
  assert_output 2
}

@test "virtual threads: the start takes a JDK 21 or later, the suite's own jar without its Spring AOT code" {
  archive "$TARGET_START_DIR/app.aot" "$JDKS/25/bin/java"
  archive "$TARGET_START_DIR/app.jsa" "$JDKS/17/bin/java"
  touch "$TARGET_START_DIR/spring-aot"
  local -A cell=([TARGET_START_MODE]=auto [TOMCAT_VIRTUAL_THREADS]=1)
  run target_java_args cell
  assert_output "$(printf '%s\n' "-XX:AOTCache=$TARGET_START_DIR/app.aot" -jar "$TARGET_START_DIR/app/loadtest-target.jar")"
  run target_spring_aot cell
  assert_output "off: TOMCAT_VIRTUAL_THREADS=1, a condition Spring AOT fixed at build time (platform threads)"
  # The archive of JDK 17 cannot serve it: plain java -jar on the JDK 25, and the note says why.
  cell[TARGET_START_MODE]=cds
  target_record_start cell "$BATS_TEST_TMPDIR/target-start.txt"
  run cat "$BATS_TEST_TMPDIR/target-start.txt"
  assert_line target_start_mode=jar
  assert_line target_java=25.0.1
  assert_line "target_start_note=no cds archive: it was made by $JDKS/17/bin/java, older than JDK 21 (TOMCAT_VIRTUAL_THREADS=1); on $JDKS/25/bin/java: TOMCAT_VIRTUAL_THREADS=1 needs JDK 21 or later"
  # Without them, the same cell starts from the archive of JDK 17.
  cell[TOMCAT_VIRTUAL_THREADS]=0
  run target_java_bin cell
  assert_output "$JDKS/17/bin/java"
}

@test "virtual threads are refused before anything starts without a JDK 21, on a running target, in a container" {
  local -A origin=([TOMCAT_VIRTUAL_THREADS]="v.matrix:2" [TARGET_HEALTH_PATH]=defaults)
  local -A value=([TOMCAT_VIRTUAL_THREADS]=1 [TARGET_CMD]='' [TARGET_URL]='' [BACKEND]=netns [TARGET_JAR]=''
    [TARGET_HEALTH_PATH]=/health [TARGET_ARGS]='' [TARGET_ENV_FILE]='' [SERVER_PORT]=8080 [MANAGEMENT_PORT]=8081)
  run _target_virtual_threads_problems origin value
  assert_output ""
  rm -rf "${JDKS:?}/25"
  run _target_virtual_threads_problems origin value
  assert_output "v.matrix:2: TOMCAT_VIRTUAL_THREADS: virtual threads need JDK 21 or later; none found (JAVA_HOME, PATH, $JDKS/*)"
  value[TOMCAT_VIRTUAL_THREADS]='0 1'
  run _target_virtual_threads_problems origin value
  assert_output --partial "v.matrix:2: TOMCAT_VIRTUAL_THREADS: virtual threads need JDK 21"
  value[TOMCAT_VIRTUAL_THREADS]=1
  value[BACKEND]=compose
  run _target_virtual_threads_problems origin value
  assert_output --partial "v.matrix:2: TOMCAT_VIRTUAL_THREADS: BACKEND=compose runs the target on its image's JDK"
  value[BACKEND]=netns value[TARGET_URL]=http://198.18.0.1:8080
  run _target_virtual_threads_problems origin value
  assert_output --partial "v.matrix:2: TOMCAT_VIRTUAL_THREADS: the suite starts no target when TARGET_URL names a running one"
  value[TOMCAT_VIRTUAL_THREADS]=0
  run _target_virtual_threads_problems origin value
  assert_output ""
}
