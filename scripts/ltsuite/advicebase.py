"""The advice's vocabulary, shared by the burst model (ltsuite.advise), the steady-load model
(ltsuite.steady) and make capacity (ltsuite.capacity): the knobs it may tune and what each is
called in application.properties and /etc/sysctl.d/, the goal, the settings a file starts from,
the runner that verifies a plan with real cells, when a cell ran the load it was asked for, and
the lines to paste. It imports none of the models, so they import it and not one another.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import formats, rules, sysctls, virtualthreads
from .cellfiles import env_text
from .plan import Plan
from .sysctl_names import SERVER

#: The knobs the advice may tune: virtual threads first (their boundary, platform threads, is the
#: axis a small budget keeps: verification_axes), then cheapest first (the order it prefers to
#: raise them in).
TUNABLE = ("TOMCAT_VIRTUAL_THREADS", "SOMAXCONN", "TOMCAT_ACCEPT_COUNT", "TCP_MAX_SYN_BACKLOG",
           "TOMCAT_MAX_THREADS", "TOMCAT_MAX_CONNECTIONS")
VIRTUAL = virtualthreads.KNOB
#: net.core.somaxconn of a new network namespace (env/sysctls.tsv's default: 4096 on kernels since
#: 5.4, include/linux/socket.h's SOMAXCONN), what a cell gets when SOMAXCONN is not set.
SOMAXCONN_DEFAULT = int(sysctls.default_of("SOMAXCONN"))
PROPERTY = {"TOMCAT_VIRTUAL_THREADS": "spring.threads.virtual.enabled",
            "TOMCAT_MAX_THREADS": "server.tomcat.threads.max",
            "TOMCAT_MAX_CONNECTIONS": "server.tomcat.max-connections",
            "TOMCAT_ACCEPT_COUNT": "server.tomcat.accept-count"}
#: The sysctl of each server-side kernel knob (env/sysctls.tsv, through sysctl_names).
SYSCTL = dict(SERVER)


@dataclass(frozen=True)
class Goal:
    """At most failed_rate of the users fail; with p99_ms, the 99th percentile answers within it."""

    failed_rate: float = 0.0
    p99_ms: int | None = None

    def allowed_failures(self, users: int) -> int:
        """Users that may fail: floor(rate x users)."""
        return math.floor(self.failed_rate * users + 1e-9)


def with_margin(ms: float) -> float:
    """A wave's time with the margin of design.request_time_ms: 10 % and 100 ms."""
    return ms * 1.1 + 100


def p99_rank(users: int) -> int:
    """The 1-based rank whose latency bounds k6's p(99) from above: k6 interpolates between the
    sorted values at 0.99 x (n - 1), so the higher of the two is rank ceil(0.99 x (n - 1)) + 1."""
    return min(users, math.ceil(0.99 * (users - 1)) + 1)


def verification_axes(p: Plan, budget: int) -> dict[str, list[int]]:
    """The one matrix's axes: for each raised knob with a cheaper value (and each kept knob the
    plan gives a boundary, Plan.kept_boundary), [cheaper, recommended]
    (a cartesian product: 2^k cells); knobs are left out from the last (the dearest) while 2^k
    exceeds the budget."""
    knobs = [k for k in p.changed if k in p.cheaper] + [k for k in p.kept_boundary if k in p.cheaper]
    while knobs and 2 ** len(knobs) > budget:
        knobs.pop()
    return {k: [p.cheaper[k], p.settings[k]] for k in knobs}


def not_as_asked(row: dict[str, Any], users: int | None) -> str | None:
    """Why a cell did not run the load it was asked for, or None when it did: it ran as designed
    (as_designed 1), sent every user's one request (http_reqs = users), none cut off by
    GRACEFUL_STOP (iterations_interrupted 0) or dropped (dropped_iterations 0). A cell that did
    not finish its users verifies nothing (its missing users are not failures it counted).
    users None: a load whose count is the run's own (a ramp), only none dropped or cut off."""
    if row.get("as_designed") != 1:
        notes = row.get("design_notes") or "not judged"
        return f"not as designed ({notes})" if row.get("as_designed") == 0 else "as_designed is empty (not judged)"
    interrupted, dropped, sent = (row.get(k) for k in ("iterations_interrupted", "dropped_iterations", "http_reqs"))
    if interrupted is None or interrupted > 0:
        return f"{'unmeasured' if interrupted is None else interrupted} iterations cut off by GRACEFUL_STOP"
    if dropped is None or dropped > 0:
        return f"{'unmeasured' if dropped is None else dropped} iterations dropped"
    if users is not None and sent != users:
        return f"{'no' if sent is None else sent} requests sent of the {users} asked for"
    return None


def read_env(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (the resolved knobs scripts/advise.sh wrote)."""
    return env_text(path.read_text())


def ms(text: str | None) -> int:
    """A k6 duration ("30s", "1m30s", "250ms") in whole milliseconds; 0 when empty or not one
    (rules.duration_ms, the one parser of durations)."""
    return int(rules.duration_ms(text or "") or 0)


def virtual_cannot(env: dict[str, str]) -> str | None:
    """virtualthreads.cannot, asked only where the load would run on virtual threads (the JDK is
    looked for by a shell)."""
    if env.get(VIRTUAL) != "1" and VIRTUAL not in env.get("TUNE", "").split():
        return None
    return virtualthreads.cannot(env)


@dataclass
class Runner:
    """Runs generated matrices through scripts/run-matrix.sh into OUT_DIR/runs/ and keeps every
    cell's row."""

    root: Path
    out: Path
    base: list[str]
    knobs: list[str]
    cells: list[dict[str, Any]] = field(default_factory=list)

    def run(self, name: str, settings: dict[str, int], axes: dict[str, list[int]]) -> list[dict[str, Any]]:
        """One matrix: the base lines, the tuned settings, the axes; returns its cells."""
        lines = list(self.base)
        for knob, value in settings.items():
            if knob in axes:
                lines.append(f"{knob}={' '.join(str(v) for v in axes[knob])}")
            elif knob not in ("TCP_MAX_SYN_BACKLOG", VIRTUAL) or value > 0:
                lines.append(f"{knob}={value}")
        matrix = self.out / f"{name}.matrix"
        matrix.write_text("# Generated by scripts/advise.sh\n" + "\n".join(lines) + "\n")
        env = {k: v for k, v in os.environ.items() if k not in self.knobs}
        env["LT_RESULTS_DIR"] = str(self.out / "runs")
        before = set((self.out / "runs").glob("*")) if (self.out / "runs").exists() else set()
        code = subprocess.run([str(self.root / "scripts/run-matrix.sh"), str(matrix)], env=env,
                              stdout=sys.stderr, check=False).returncode
        if code == 2 and not self.cells:
            # Refused before anything ran (run-matrix.sh named the key): bad input, as everywhere.
            raise SystemExit(2)
        new = [d for d in (self.out / "runs").glob("*") if d not in before and d.name != "latest" and d.is_dir()]
        if not new:
            raise RuntimeError(f"run-matrix.sh {matrix.name} made no run (exit {code})")
        run_dir = new[0]
        found = []
        for row_file in sorted(run_dir.glob("cells/*/row.json")):
            row = formats.read_run_file(row_file)
            cell_settings = dict(settings)
            for knob in axes:
                cell_settings[knob] = int(row["axes"][knob])
            found.append({"run": run_dir.name, "cell": row["cell"], "row": str(row_file.relative_to(self.out)),
                          "report": str((run_dir / "report.html").relative_to(self.out)),
                          "settings": cell_settings, "row_data": row})
        self.cells.extend(found)
        return found


def paste_lines(recommended: dict[str, int],
                starting_from: dict[str, Any] | None = None) -> tuple[list[str], list[str]]:
    """application.properties lines and /etc/sysctl.d/ lines for the recommended knobs. A sysctl
    the advice kept at its starting value is left out of the sysctl.d lines: the lab's value can
    stand for something the host has not (doctor's reproduce.matrix sets SOMAXCONN to a stale
    listener's backlog, 8, on a host at 4096), and pasting it would lower the host's."""
    props = [f"{PROPERTY[k]}={('false', 'true')[v] if k == VIRTUAL else v}" for k, v in recommended.items()
             if k in PROPERTY]
    sysctls = [f"{SYSCTL[k]} = {v}" for k, v in recommended.items()
               if k in SYSCTL and (starting_from is None or str(starting_from.get(k)) != str(v))]
    return props, sysctls


#: Said under the sysctl.d lines of every advice.
SYSCTL_NOTE = ("These are the least values the verifying run needed: where a host already has a "
               "higher one (net.core.somaxconn is 4096 by default since Linux 5.4), keep it; "
               "a lower value there would shrink its queues. A kernel setting the advice kept is not "
               "listed.")


def recommended_lines(advice: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The recommended knobs as markdown lines (each with what it was) and the lines to paste
    (application.properties, then /etc/sysctl.d/): one text for the burst and the steady advice."""
    knobs = [f"- `{k}` = {v} (was {advice['starting_from'][k]})" for k, v in advice["recommended"].items()]
    props, sysctls = paste_lines(advice["recommended"], advice["starting_from"])
    paste: list[str] = []
    if props:
        paste += ["application.properties:", "", "```properties", *props, "```", ""]
    if sysctls:
        paste += ["/etc/sysctl.d/90-advice.conf:", "", "```", *sysctls, "```", "", SYSCTL_NOTE, ""]
    return knobs, paste


def verdict_lines(advice: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The advice's answer as markdown lines, first under the goal, and the lines to paste (none
    when nothing was verified): a setting is recommended only when a real run verified it. One
    text for the burst and the steady advice."""
    if not advice["verified"]:
        return (["**Cannot recommend a setting**: " + (advice["cannot"] or "no cell verified one") + ".",
                 "Nothing is recommended that a run did not verify.", ""], [])
    knobs, paste = recommended_lines(advice)
    return ["**Recommended (verified by a real run)**:", "", *knobs], paste


def write_advice(out: Path, advice: dict[str, Any], source: str, markdown: Callable[[dict[str, Any]], str]) -> int:
    """OUT/advice.json and OUT/advice.md (MARKDOWN's text) of an advice from SOURCE, and its answer
    on stdout; the exit status: 0 when a run verified the setting, 3 when nothing was verified."""
    advice["source"] = source
    advice["application_properties"], advice["sysctl_d"] = paste_lines(advice["recommended"],
                                                                       advice["starting_from"])
    (out / "advice.json").write_text(json.dumps(advice, indent=2) + "\n")
    (out / "advice.md").write_text(markdown(advice))
    if advice["verified"]:
        print("recommended (verified): " + " ".join(f"{k}={v}" for k, v in advice["recommended"].items()))
    else:
        print("cannot recommend: " + (advice["cannot"] or "nothing verified"))
    print(f"advice: {out}/advice.md")
    return 0 if advice["verified"] else 3


def starting_point(env: dict[str, str]) -> tuple[dict[str, int], Goal, list[str], int]:
    """What a resolved advice file starts from: the settings of the knobs the advice may tune (a
    knob the file leaves unset at what a cell gets without it: somaxconn SOMAXCONN_DEFAULT,
    tcp_max_syn_backlog and virtual threads 0, meaning not set), the goal, TUNE and
    ADVISE_MAX_CELLS (8 when unset)."""
    settings = {
        "TOMCAT_MAX_THREADS": int(env["TOMCAT_MAX_THREADS"]),
        "TOMCAT_MAX_CONNECTIONS": int(env["TOMCAT_MAX_CONNECTIONS"]),
        "TOMCAT_ACCEPT_COUNT": int(env["TOMCAT_ACCEPT_COUNT"]),
        "SOMAXCONN": int(env.get("SOMAXCONN") or SOMAXCONN_DEFAULT),
        "TCP_MAX_SYN_BACKLOG": int(env.get("TCP_MAX_SYN_BACKLOG") or 0),
        VIRTUAL: int(env.get(VIRTUAL) or 0),
    }
    goal = Goal(float(env.get("GOAL_FAILED_RATE") or 0), int(env["GOAL_P99_MS"]) if env.get("GOAL_P99_MS") else None)
    return settings, goal, env.get("TUNE", "").split(), int(env.get("ADVISE_MAX_CELLS") or 8)
