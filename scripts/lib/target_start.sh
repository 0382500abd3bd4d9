# shellcheck shell=bash
# Summary: how the target's JVM starts (TARGET_START_MODE): from an AOT cache
# (JDK 25 or later, JEP 483/514/515), from a class-data-sharing archive (any
# JDK) or as a plain `java -jar`, and the training starts that make those
# archives. The suite's own jar is trained by scripts/setup/build-target-start.sh;
# a jar of one's own (TARGET_JAR) in the first cell that runs it, once per
# checksum of the jar, never touching the jar itself (the archive and an
# extracted copy live in TARGET_START_CACHE). Sourced by target.sh.
#
# An archive only serves the exact class path and JVM it was trained with:
# each one records the java that made it (ARCHIVE.java) and is started with
# that java, from the extracted copy it was trained on.

TARGET_START_DIR="$LT_ROOT/server/target/start"
TARGET_START_CACHE="${LT_TARGET_START_CACHE:-$LT_ROOT/results/.target-start}"
# Where JDKs are looked for (JAVA_HOME and the java on PATH are always asked).
TARGET_JDK_DIRS="${LT_JDK_DIRS:-/usr/lib/jvm}"
# Seconds a training start may take to write its archive after SIGTERM.
readonly TARGET_TRAIN_EXIT_S=120
# The training start in progress: "MODE<TAB>JAVA<TAB>OUTPUT<TAB>JAR" (state
# of this file, read by target_start_words; empty outside a training start).
TARGET_TRAINING=""
# sha256 of jars already summed: "path:mtime:size" -> sum, and the JDK 25
# found (or "none"): state of this file, filled in the caller's shell by
# target_start_warm so the subshells that read them need not look again.
declare -gA TARGET_JAR_SUMS=()
TARGET_AOT_JAVA_FOUND=""

# target_java_feature JAVA: the feature version of JAVA (17, 25), from its
# JDK's release file, else from -version; 0 when it cannot tell.
target_java_feature() {
  target_resolved_java_feature "$(readlink -f "$1")"
}

# target_resolved_java_feature JAVA: target_java_feature of a resolved path
# (readlink -f), its release file read by the shell itself: the first cell
# asks it of every JDK there is, and each process is a few ms of its start.
target_resolved_java_feature() {
  local java="$1" home line version=""
  home="${java%/*}"
  home="${home%/*}"
  if [[ -f "$home/release" ]]; then
    while IFS= read -r line; do
      if [[ "$line" =~ ^JAVA_VERSION=\"([0-9]*) ]]; then
        version="${BASH_REMATCH[1]}"
        break
      fi
    done <"$home/release"
  else
    version="$("$java" -version 2>&1 | sed -n '1s/.*version "\([0-9]*\).*/\1/p')"
  fi
  printf '%s\n' "${version:-0}"
}

# target_java_version JAVA: the full version of JAVA (25.0.3), from its
# JDK's release file (no JVM started), else from -version.
target_java_version() {
  local java home version=""
  java="$(readlink -f "$(command -v "$1")")"
  home="$(dirname "$(dirname "$java")")"
  [[ ! -f "$home/release" ]] || version="$(sed -n 's/^JAVA_VERSION="\([^"]*\)".*/\1/p' "$home/release")"
  [[ -n "$version" ]] || version="$("$java" -version 2>&1 | sed -n '1s/.*version "\([^"]*\)".*/\1/p')"
  printf '%s\n' "$version"
}

# target_aot_java: the java of the newest JDK 25 or later found (JAVA_HOME,
# PATH, TARGET_JDK_DIRS/*), as a resolved path; nothing when there is none
# (then the start falls back to class-data sharing).
target_aot_java() {
  if [[ -n "$TARGET_AOT_JAVA_FOUND" ]]; then
    [[ "$TARGET_AOT_JAVA_FOUND" == none ]] || printf '%s\n' "$TARGET_AOT_JAVA_FOUND"
    return 0
  fi
  target_newest_java 25
}
# Virtual threads (TOMCAT_VIRTUAL_THREADS=1): JDK 21 and later (JEP 444).
readonly TARGET_VIRTUAL_THREADS_JDK=21
# target_newest_java MIN: the java of the newest JDK of feature MIN or later
# found (JAVA_HOME, PATH, TARGET_JDK_DIRS/*), as a resolved path; nothing
# when there is none.
target_newest_java() {
  local min="$1" java resolved feature best="" best_feature=0
  for java in "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" "$TARGET_JDK_DIRS"/*/bin/java; do
    [[ -n "$java" && -x "$java" ]] || continue
    resolved="$(readlink -f "$java")"
    feature="$(target_resolved_java_feature "$resolved")"
    if ((feature >= min && feature > best_feature)); then
      best="$resolved"
      best_feature="$feature"
    fi
  done
  [[ -z "$best" ]] || printf '%s\n' "$best"
}

# target_jar_sum JAR: the jar's sha256 (computed once per path, mtime and size).
target_jar_sum() {
  local jar="$1" key
  key="$jar:$(stat -c '%Y:%s' "$jar")"
  if [[ -z "${TARGET_JAR_SUMS[$key]:-}" ]]; then
    TARGET_JAR_SUMS[$key]="$(sha256sum "$jar" | cut -d' ' -f1)"
  fi
  printf '%s\n' "${TARGET_JAR_SUMS[$key]}"
}

# target_start_warm CELL_ASSOC: look for the JDK 25 and sum the cell's jar
# once, in the caller's shell.
target_start_warm() {
  local -n warm_values="$1"
  [[ -n "$TARGET_AOT_JAVA_FOUND" ]] || TARGET_AOT_JAVA_FOUND="$(target_aot_java)"
  : "${TARGET_AOT_JAVA_FOUND:=none}"
  if [[ "$(target_kind warm_values)" == jar && -f "${warm_values[TARGET_JAR]}" ]]; then
    local key
    key="${warm_values[TARGET_JAR]}:$(stat -c '%Y:%s' "${warm_values[TARGET_JAR]}")"
    [[ -n "${TARGET_JAR_SUMS[$key]:-}" ]] \
      || TARGET_JAR_SUMS[$key]="$(sha256sum "${warm_values[TARGET_JAR]}" | cut -d' ' -f1)"
  fi
}

# target_start_dir CELL_ASSOC: the directory of the cell's jar's extracted
# copy and archives: the suite's own one's, or TARGET_START_CACHE/<sha256>.
target_start_dir() {
  local -n dir_values="$1"
  if [[ "$(target_kind dir_values)" == jar ]]; then
    printf '%s/%s\n' "$TARGET_START_CACHE" "$(target_jar_sum "${dir_values[TARGET_JAR]}")"
  else
    printf '%s\n' "$TARGET_START_DIR"
  fi
}

# target_archive_path CELL_ASSOC MODE: the archive a start of MODE (aot or
# cds) uses. A jar of one's own has one per set of TARGET_JAVA_OPTS (a
# different collector or heap layout would make the JVM refuse it).
target_archive_path() {
  local -n archive_values="$1"
  local mode="$2" dir ext=jsa opts_sum
  dir="$(target_start_dir archive_values)"
  [[ "$mode" == cds ]] || ext=aot
  if [[ "$(target_kind archive_values)" == jar ]]; then
    opts_sum="$(printf '%s' "${archive_values[TARGET_JAVA_OPTS]:-}" | sha256sum | cut -c1-12)"
    printf '%s/app-%s.%s\n' "$dir" "$opts_sum" "$ext"
  else
    printf '%s/app.%s\n' "$dir" "$ext"
  fi
}

# target_run_jar CELL_ASSOC: the extracted copy of the cell's jar (the class
# path the archives were trained with).
target_run_jar() {
  local -n run_values="$1"
  local jar="$TARGET_OWN_JAR"
  [[ "$(target_kind run_values)" != jar ]] || jar="${run_values[TARGET_JAR]}"
  printf '%s/app/%s\n' "$(target_start_dir run_values)" "$(basename "$jar")"
}

# target_start_plan CELL_ASSOC: how the cell's target starts, five lines:
# the mode it gets (aot, cds, jar, or cmd for TARGET_CMD), the java, the
# archive, the jar to run and a note on why it got less than it asked for.
# TARGET_START_MODE=auto asks for aot, then cds; aot falls back to cds when
# there is no JDK 25 or no cache, cds to jar when there is no archive. An
# archive counts when it is non-empty, the java that made it is still there,
# and (the suite's own jar) it is newer than the jar.
target_start_plan() {
  local -n plan_values="$1"
  local requested="${plan_values[TARGET_START_MODE]:-auto}" kind jar mode archive java note=""
  kind="$(target_kind plan_values)"
  if [[ "$kind" == cmd ]]; then
    printf '%s\n' cmd "" "" "" ""
    return
  fi
  jar="$TARGET_OWN_JAR"
  [[ "$kind" != jar ]] || jar="${plan_values[TARGET_JAR]}"
  for mode in aot cds; do
    case "$requested:$mode" in
      jar:* | cds:aot) continue ;;
    esac
    archive="$(target_archive_path plan_values "$mode")"
    java=""
    [[ ! -s "$archive.java" ]] || java="$(<"$archive.java")"
    if [[ -s "$archive" && -n "$java" && -x "$java" && -f "$(target_run_jar plan_values)" ]] \
      && [[ "$kind" == jar || "$archive" -nt "$jar" ]]; then
      if ! target_plan_threads_ok plan_values "$java"; then
        note+="${note:+; }no $mode archive: it was made by $java, older than JDK $TARGET_VIRTUAL_THREADS_JDK (TOMCAT_VIRTUAL_THREADS=1)"
        continue
      fi
      printf '%s\n' "$mode" "$java" "$archive" "$(target_run_jar plan_values)" "$note"
      return
    fi
    note+="${note:+; }$(target_missing_note plan_values "$mode" "$archive")"
  done
  java=java
  if ! target_plan_threads_ok plan_values java; then
    java="$(target_newest_java "$TARGET_VIRTUAL_THREADS_JDK")"
    note+="${note:+; }on $java: TOMCAT_VIRTUAL_THREADS=1 needs JDK $TARGET_VIRTUAL_THREADS_JDK or later"
  fi
  printf '%s\n' jar "$java" "" "$jar" "$note"
}
# target_plan_threads_ok CELL_ASSOC JAVA: succeed unless the cell asks for
# virtual threads (TOMCAT_VIRTUAL_THREADS=1) and JAVA is older than JDK 21.
target_plan_threads_ok() {
  local -n threads_values="$1"
  [[ "${threads_values[TOMCAT_VIRTUAL_THREADS]:-0}" == 1 ]] || return 0
  (($(target_java_feature "$(command -v "$2")") >= TARGET_VIRTUAL_THREADS_JDK))
}

# target_missing_note CELL_ASSOC MODE ARCHIVE: why ARCHIVE (a start of MODE)
# cannot serve the cell.
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
target_missing_note() {
  local -n note_values="$1"
  local mode="$2" archive="$3"
  if [[ "$mode" == aot && -z "$(target_aot_java)" ]]; then
    printf 'no AOT cache: no JDK 25 or later found'
  elif [[ -s "$archive.failed" ]]; then
    printf 'no %s archive: its training start failed (%s)' "$mode" "$(head -c 200 "$archive.failed")"
  elif [[ "$(target_kind note_values)" == jar ]]; then
    printf 'no %s archive yet for this jar' "$mode"
  else
    printf 'no %s archive newer than the jar (scripts/setup/build-target-start.sh makes it)' "$mode"
  fi
}

# The mark of the suite's own jar's Spring AOT code (server/pom.xml runs
# spring-boot-maven-plugin's process-aot): made by build-target-start.sh when
# the jar has the generated initializer, so no cell opens the jar to look.
TARGET_SPRING_AOT_MARK="spring-aot"

# target_spring_aot CELL_ASSOC: whether the cell's target starts its Spring
# context from the code Spring AOT generated at build time
# (-Dspring.aot.enabled=true: no bean definitions parsed or conditions
# evaluated at start, about a quarter of the start's CPU). Prints "on", or
# "off: why". Only the suite's own jar, and only with its own settings: AOT
# fixes the conditions at build time, so a TARGET_ARGS or TARGET_ENV_FILE
# that could change one (spring.threads.virtual.enabled, say) starts it
# without. The cell's knobs are all bound at run time (properties, not
# conditions), and the build turns on the health probes the runner asks for.
target_spring_aot() {
  local -n aot_values="$1"
  local mark="$TARGET_START_DIR/$TARGET_SPRING_AOT_MARK"
  if [[ "$(target_kind aot_values)" != own ]]; then
    printf 'off: not the suite'"'"'s own jar\n'
  elif [[ "${aot_values[TOMCAT_VIRTUAL_THREADS]:-0}" == 1 ]]; then
    printf 'off: TOMCAT_VIRTUAL_THREADS=1, a condition Spring AOT fixed at build time (platform threads)\n'
  elif [[ -n "${aot_values[TARGET_ARGS]:-}${aot_values[TARGET_ENV_FILE]:-}" ]]; then
    printf 'off: TARGET_ARGS or TARGET_ENV_FILE may change a condition Spring AOT fixed at build time\n'
  elif [[ ! -f "$mark" || ! "$mark" -nt "$TARGET_OWN_JAR" ]]; then
    printf 'off: no Spring AOT mark newer than the jar (scripts/setup/build-target-start.sh makes it)\n'
  else
    printf 'on\n'
  fi
}

# target_start_words CELL_ASSOC: the java, then the archive option (and
# Spring AOT's switch, target_spring_aot) and the jar of the cell's start (or
# of the training start in progress), one a line.
target_start_words() {
  local -a plan
  if [[ -n "$TARGET_TRAINING" ]]; then
    IFS=$'\t' read -r -a plan <<<"$TARGET_TRAINING"
    case "${plan[0]}" in
      aot) printf '%s\n' "${plan[1]}" "-XX:AOTCacheOutput=${plan[2]}" ;;
      cds) printf '%s\n' "${plan[1]}" "-XX:ArchiveClassesAtExit=${plan[2]}" ;;
    esac
    printf '%s\n' "${plan[3]}"
    return
  fi
  mapfile -t plan < <(target_start_plan "$1")
  printf '%s\n' "${plan[1]}"
  case "${plan[0]}" in
    # -Xshare:auto: a mismatched archive is ignored, never fatal; an AOT
    # cache is the same (AOTMode=auto).
    aot) printf '%s\n' "-XX:AOTCache=${plan[2]}" ;;
    cds) printf '%s\n' "-XX:SharedArchiveFile=${plan[2]}" -Xshare:auto ;;
  esac
  [[ "$(target_spring_aot "$1")" != on ]] || printf '%s\n' -Dspring.aot.enabled=true
  printf '%s\n' "${plan[3]}"
}

# target_record_start CELL_ASSOC FILE: which start the cell's target got, as
# KEY=value lines (target_start_mode, target_java, target_start_archive,
# target_start_note) in FILE (target-start.txt).
target_record_start() {
  local -a plan
  mapfile -t plan < <(target_start_plan "$1")
  {
    printf 'target_start_mode=%s\n' "${plan[0]}"
    if [[ "${plan[0]}" != cmd ]]; then
      printf 'target_java=%s\n' "$(target_java_version "${plan[1]}")"
    fi
    printf 'target_start_archive=%s\n' "${plan[2]#"$LT_ROOT"/}"
    printf 'target_spring_aot=%s\n' "$(target_spring_aot "$1")"
    printf 'target_start_note=%s\n' "${plan[4]}"
  } | write_atomic "$2"
}

# target_record_start_cpu FILE: add to FILE (target-start.txt) the CPU time
# the running target has used so far (target_start_cpu_s, user + system, of
# all its threads), read when it is healthy: the start's cost in CPU-seconds.
target_record_start_cpu() {
  local cpu_s
  [[ -n "$TARGET_PID" ]] || return 0
  # Asked once a run (target_cpu_s runs in a subshell here).
  TARGET_CLK_TCK="${TARGET_CLK_TCK:-$(getconf CLK_TCK)}"
  cpu_s="$(target_cpu_s "$TARGET_PID")"
  [[ -z "$cpu_s" ]] || printf 'target_start_cpu_s=%s\n' "$cpu_s" >>"$1"
}

# target_cpu_s PID: the CPU-seconds (user + system, all its threads) PID has
# used so far; nothing when it is gone.
# Read in the runner's shell, without a process: it is read as the target
# turns healthy, beside a JVM that has just started.
target_cpu_s() {
  local line ticks
  local -a stat
  read -r line 2>/dev/null <"/proc/$1/stat" || return 0
  # Fields after "pid (comm) ": state is the first, utime the 12th, stime the 13th.
  read -r -a stat <<<"${line##*) }"
  [[ "${stat[11]:-}" =~ ^[0-9]+$ && "${stat[12]:-}" =~ ^[0-9]+$ ]] || return 0
  TARGET_CLK_TCK="${TARGET_CLK_TCK:-$(getconf CLK_TCK)}"
  # Hundredths, rounded half up, as printf "%.2f" of ticks / hz.
  ticks=$(((stat[11] + stat[12]) * 200 / TARGET_CLK_TCK))
  ticks=$(((ticks + 1) / 2))
  printf '%d.%02d\n' $((ticks / 100)) $((ticks % 100))
}

# target_train_wanted CELL_ASSOC: the mode (aot or cds) of the archive a
# jar of one's own still lacks for its start mode; nothing when it has it,
# asked for none, or its training failed before.
target_train_wanted() {
  local -n wanted_values="$1"
  local requested="${wanted_values[TARGET_START_MODE]:-auto}" mode archive
  [[ "$(target_kind wanted_values)" == jar && "$requested" != jar ]] || return 0
  mode=cds
  if [[ "$requested" != cds && -n "$(target_aot_java)" ]]; then
    mode=aot
  fi
  archive="$(target_archive_path wanted_values "$mode")"
  [[ -s "$archive" || -s "$archive.failed" ]] || printf '%s\n' "$mode"
}

# target_extract JAR DIR: DIR/app/<jar's name>, a copy of JAR the archives are
# trained on: Spring Boot's own extraction (jarmode tools, Spring Boot 3.3
# and later: the application's classes on the class path, where an archive
# can hold them), else the jar copied as it is.
target_extract() {
  local jar="$1" dir="$2" tmp
  [[ ! -f "$dir/app/$(basename "$jar")" ]] || return 0
  tmp="$dir/app.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if ! java -Djarmode=tools -jar "$jar" extract --destination "$tmp" >/dev/null 2>&1 \
    || [[ ! -f "$tmp/$(basename "$jar")" ]]; then
    rm -rf "$tmp"
    mkdir -p "$tmp"
    cp "$jar" "$tmp/" || return 1
  fi
  rm -rf "$dir/app"
  mv "$tmp" "$dir/app"
}

# target_train CELL_ASSOC CELL_DIR BASE_URL: for a jar of one's own without
# the archive its start mode asks for, one training start (in the cell's
# server namespace, with the cell's settings): up to healthy, its health
# path asked three times more, SIGTERM; the JVM writes the archive as it
# exits. Once per jar checksum (and TARGET_JAVA_OPTS); a failure is noted
# beside the archive (ARCHIVE.failed) and the cell starts without it. Its
# time is marked in phases.tsv (train_start, train_end).
# shellcheck disable=SC2034 # SC2034: assigned through a nameref, or read by the file that sourced this one
target_train() {
  local -n train_values="$1"
  local cell_dir="$2" base_url="$3" mode dir archive java side url i error=""
  target_start_warm train_values
  mode="$(target_train_wanted train_values)"
  [[ -n "$mode" ]] || return 0
  phase_mark "$cell_dir" train_start
  dir="$(target_start_dir train_values)"
  archive="$(target_archive_path train_values "$mode")"
  java=java
  [[ "$mode" != aot ]] || java="$(target_aot_java)"
  java="$(readlink -f "$(command -v "$java")")"
  say "  training the target's start ($mode archive of ${train_values[TARGET_JAR]}, once per jar)"
  mkdir -p "$dir"
  rm -f "$archive.tmp"
  if ! target_extract "${train_values[TARGET_JAR]}" "$dir"; then
    error="cannot copy the jar into $dir"
  else
    TARGET_TRAINING="$(printf '%s\t%s\t%s\t%s' "$mode" "$java" "$archive.tmp" "$(target_run_jar train_values)")"
    target_start train_values "$cell_dir/target-train.log"
    TARGET_TRAINING=""
    read -r side url < <(target_health_probe train_values "$base_url")
    if target_wait_healthy "$url" "${train_values[TARGET_START_TIMEOUT]}" target_alive "$cell_dir/target-train.log" "$side"; then
      local -a own_port
      mapfile -t own_port < <(netns_curl_ports "$side")
      for i in 1 2 3; do
        netns_exec "$side" curl -sS "${own_port[@]}" -o /dev/null --max-time 2 "$url" 2>/dev/null || true
      done
    else
      error="$CELL_ERROR"
      cell_error ""
    fi
    target_train_stop
    if [[ -z "$error" && ! -s "$archive.tmp" ]]; then
      error="the JVM wrote no archive; see target-train.log of the cell that trained it"
    fi
  fi
  if [[ -z "$error" ]]; then
    mv "$archive.tmp" "$archive"
    printf '%s\n' "$java" >"$archive.java"
  else
    rm -f "$archive.tmp"
    printf '%s\n' "$error" >"$archive.failed"
    warn "the training start failed ($error); the cell starts without a $mode archive"
  fi
  phase_mark "$cell_dir" train_end
}

# target_train_stop: SIGTERM to the training start, then wait while it
# writes its archive (up to TARGET_TRAIN_EXIT_S; SIGKILL after).
target_train_stop() {
  [[ -n "$TARGET_PID" ]] || return 0
  stop_pid "-$TARGET_PID" "$TARGET_TRAIN_EXIT_S" || true
  end_child "$TARGET_PID" TERM 5 || true
  TARGET_PID=""
}
