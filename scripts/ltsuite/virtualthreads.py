"""Virtual threads in make advise (TOMCAT_VIRTUAL_THREADS, Spring Boot's
spring.threads.virtual.enabled): whether the advice can use them here, and whether it proposes
them over platform threads.

The rule (rules.workers): with virtual threads Tomcat's executor starts a virtual thread per
request and keeps no pool, so a blocking endpoint (a sleep, a socket read: the wait unmounts the
virtual thread, JEP 444; inside synchronized too since JDK 24, JEP 491) is served
max-connections requests at once, not min(threads, max-connections): the waves of a burst and
the requests in service of a steady load are bounded by max-connections alone.

With TOMCAT_VIRTUAL_THREADS in TUNE the advice makes two plans from the file's settings, one on
platform threads and one on virtual threads, and proposes virtual threads
  - when platform threads cannot meet the goal (the threads the goal needs are not in TUNE or
    their stacks exceed the memory) and virtual threads can, or
  - when both can and the platform plan raises the thread pool: virtual threads meet the same
    goal without it (every other knob of the virtual plan is at most the platform plan's, since
    min(threads, max-connections) never exceeds max-connections), so the pool's stacks
    (advise.THREAD_STACK_MB each) are the resources saved.
Otherwise platform threads stay (the file's pool already suffices: nothing to save), and a
file already on virtual threads keeps them where they meet the goal. The boundary of a proposal
is platform threads at the same settings (TOMCAT_VIRTUAL_THREADS=0).

They cannot be used (the advice says so, and why) where the suite cannot honour the property
(scripts/lib/target.sh _target_virtual_threads_problems): no JDK 21 or later on this host, a
target it does not start (TARGET_URL), a container on its image's JDK (BACKEND=compose), a
command that is not a Spring Boot jar (TARGET_CMD).
"""
from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path
from typing import Callable

from .plan import Plan

KNOB = "TOMCAT_VIRTUAL_THREADS"
ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=4)
def newest_java(jdk_dirs: str | None = None) -> str:
    """The java of the newest JDK 21 or later this host has, as the target's start finds it
    (scripts/lib/target_start.sh target_newest_java: JAVA_HOME, PATH, LT_JDK_DIRS/*); empty when
    there is none."""
    env = {"LT_ROOT": str(ROOT), "PATH": "/usr/local/bin:/usr/bin:/bin"}
    for key in ("PATH", "JAVA_HOME", "LT_JDK_DIRS"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    if jdk_dirs is not None:
        env["LT_JDK_DIRS"] = jdk_dirs
    script = 'source "$LT_ROOT/scripts/lib/target_start.sh" && target_newest_java "$TARGET_VIRTUAL_THREADS_JDK"'
    done = subprocess.run(["/bin/bash", "-c", script], env=env, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def cannot(env: dict[str, str], java: str | None = None) -> str | None:
    """Why the suite cannot run this load's target on virtual threads, None when it can; java is
    the JDK 21+ found (newest_java() when not given)."""
    if env.get("TARGET_CMD"):
        return ("TARGET_CMD starts a command of one's own, not a Spring Boot jar the suite starts: "
                "spring.threads.virtual.enabled is set in that application")
    if env.get("TARGET_URL"):
        return "TARGET_URL names a running target the suite does not start: set spring.threads.virtual.enabled there"
    if env.get("BACKEND", "netns") == "compose":
        return "BACKEND=compose runs the target on its image's JDK; virtual threads run with BACKEND=netns"
    if not (newest_java() if java is None else java):
        return ("virtual threads need JDK 21 or later (JEP 444) and this host has none "
                f"(JAVA_HOME, PATH, {os.environ.get('LT_JDK_DIRS') or '/usr/lib/jvm'}/*)")
    return None


def consider(tune: list[str], start: dict[str, int], why_not: str | None,
             plan_with: Callable[[int, list[str]], Plan], fails_at: Callable[[dict[str, int]], bool]) -> Plan:
    """The plan, with or without virtual threads (the module's rule). plan_with(virtual, tune)
    makes the plan on platform (0) or virtual (1) threads with the other knobs of TUNE;
    fails_at(settings) is the model's word that a setting must miss the goal; why_not is
    cannot()'s answer."""
    rest = [k for k in tune if k != KNOB]
    if KNOB not in tune:
        return plan_with(start.get(KNOB, 0), rest)
    platform = plan_with(0, rest)
    if why_not:
        platform.reasons[KNOB] = f"cannot: {why_not}"
        if platform.settings is None:
            platform.cannot = f"{platform.cannot}; and virtual threads cannot: {why_not}"
        return platform
    virtual = plan_with(1, rest)
    if virtual.settings is None:
        if platform.settings is None:
            platform.cannot = f"{platform.cannot}; on virtual threads too: {virtual.cannot}"
        platform.reasons[KNOB] = f"not proposed: on virtual threads {virtual.cannot}"
        return platform
    threads = "TOMCAT_MAX_THREADS"
    mc = virtual.settings["TOMCAT_MAX_CONNECTIONS"]
    if start.get(KNOB, 0) == 1:
        virtual.reasons[KNOB] = ("kept at 1: the file's virtual threads meet the goal (max-connections "
                                 f"{mc} bounds the requests served at once); a change to platform threads would add a pool")
        return virtual
    if platform.settings is None:
        reason = (f"proposed, because platform threads cannot: {platform.cannot}. On virtual threads Tomcat keeps "
                  f"no pool and a blocking request waits without holding a thread, so max-connections {mc} "
                  f"bounds the requests served at once and the goal is met")
    elif platform.settings[threads] > start[threads]:
        pool = platform.settings[threads]
        reason = (f"proposed, for the same goal with fewer resources: platform threads need a pool of {pool} "
                  f"threads (TOMCAT_MAX_THREADS {start[threads]} -> {pool}, a stack each); on virtual threads "
                  f"Tomcat keeps no pool and a blocking request waits without holding a thread, so "
                  f"max-connections {mc} bounds the requests served at once, no other knob higher than on "
                  f"platform threads")
    else:
        platform.reasons[KNOB] = (f"not proposed: the file's {start[threads]} platform threads already meet the "
                                  f"goal, so virtual threads would save nothing")
        return platform
    virtual.changed = [KNOB, *virtual.changed]
    virtual.cheaper = {KNOB: 0, **virtual.cheaper}
    virtual.sure = {KNOB: fails_at({**virtual.settings, KNOB: 0}), **virtual.sure}
    virtual.reasons[KNOB] = reason + " (needs JDK 21+ and Spring Boot 3.2+; the cells run on the JDK found here)"
    return virtual
