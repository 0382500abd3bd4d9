"""Two readings of the same host by the doctor, compared: what changed in its settings, its
listeners, its rates and its findings (make doctor ... BEFORE=results/doctor-X).

  python3 -m ltsuite.doctorcompare BEFORE_DIR AFTER_DIR   writes AFTER_DIR/compare.md and
                                                          compare.json, prints the summary
  python3 -m ltsuite.doctorcompare check BEFORE_DIR PORT HOST   exit 2 naming why when
                                                          BEFORE_DIR is no reading of PORT on HOST

Each directory is one the doctor wrote (its doctor.json). Only the standard library, as
ltsuite/doctor.py: a host needs nothing more to compare its own readings.
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: Tomcat's settings the doctor reads (doctor.json's tomcat), compared one by one.
TOMCAT_SETTINGS = ("accept_count", "max_connections", "max_threads", "virtual_threads")


@dataclass
class Change:
    """One figure of the two readings: its group (setting, listener, rate, finding), its name,
    its value before and after (None: not read), and whether it changed."""
    group: str
    name: str
    before: Any
    after: Any

    @property
    def changed(self) -> bool:
        return self.before != self.after


class NotComparable(ValueError):
    """The two directories are not two readings of one host's port."""


def load(directory: Path) -> dict[str, Any]:
    """doctor.json of a doctor's directory; NotComparable naming the file when it is not one."""
    path = directory / "doctor.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise NotComparable(f"{path}: not a doctor's reading ({err.__class__.__name__})") from err
    if not isinstance(data, dict) or "port" not in data or "findings" not in data:
        raise NotComparable(f"{path}: not a doctor's reading (no port or findings)")
    return data


def check(before_dir: Path, port: int, host: str) -> None:
    """NotComparable unless before_dir holds a doctor's reading of `port` on `host`: checked before
    a new reading starts, so a wrong BEFORE costs no window."""
    data = load(before_dir)
    if data.get("port") != port or data.get("host") != host:
        raise NotComparable(f"{before_dir / 'doctor.json'}: a reading of port {data.get('port')} on "
                            f"{data.get('host')}, not of port {port} on {host}: compare two readings of the "
                            f"same host and port")


def _listener(x: dict[str, Any]) -> str:
    """A listener's name as doctor.listener_name gives it: address:port, "#N" for the N-th of
    several on one address and port."""
    nth = x.get("nth") or 1
    return f"{x['addr']}:{x['port']}" + (f"#{nth}" if nth > 1 else "")


def _overflows_per_s(d: dict[str, Any]) -> float:
    """ListenOverflows a second over the window (0 when it did not rise)."""
    elapsed = d.get("elapsed_s") or d.get("window_s") or 0
    count = (d.get("counters") or {}).get("TcpExtListenOverflows", 0)
    return round(count / elapsed, 1) if elapsed else float(count)


def _load_value(d: dict[str, Any], name: str) -> Any:
    return ((d.get("load") or {}).get(name) or {}).get("value")


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """Every figure of the two readings, in the groups' order: the sysctls read and Tomcat's
    settings; each listener's backlog (by address:port; None where it was not there); the
    rates (ListenOverflows a second, and the load's estimate: new connections, requests a
    second, the endpoint's time, busy threads); each finding's severity (None where it was not
    found). Readings of another port or host are NotComparable: the comparison is for the same
    service before and after a change."""
    for key in ("port", "host"):
        if before.get(key) != after.get(key):
            raise NotComparable(f"the readings are of {key} {before.get(key)} and {after.get(key)}: "
                                f"compare two readings of the same host and port")
    out = []
    sysctls_before, sysctls_after = before.get("sysctls") or {}, after.get("sysctls") or {}
    for name in list(dict.fromkeys([*sysctls_before, *sysctls_after])):
        out.append(Change("setting", name, sysctls_before.get(name), sysctls_after.get(name)))
    tomcat_before, tomcat_after = before.get("tomcat") or {}, after.get("tomcat") or {}
    for name in TOMCAT_SETTINGS:
        out.append(Change("setting", f"tomcat.{name}", tomcat_before.get(name), tomcat_after.get(name)))
    listeners_before = {_listener(x): x for x in before.get("listeners") or []}
    listeners_after = {_listener(x): x for x in after.get("listeners") or []}
    for name in list(dict.fromkeys([*listeners_before, *listeners_after])):
        out.append(Change("listener", f"{name} backlog", (listeners_before.get(name) or {}).get("backlog"),
                          (listeners_after.get(name) or {}).get("backlog")))
        out.append(Change("listener", f"{name} queue peak", (listeners_before.get(name) or {}).get("queue_peak"),
                          (listeners_after.get(name) or {}).get("queue_peak")))
    out.append(Change("rate", "ListenOverflows/s", _overflows_per_s(before), _overflows_per_s(after)))
    for name, label in (("new_connections_per_s", "new connections/s"), ("requests_per_s", "requests/s"),
                        ("service_ms", "endpoint ms"), ("busy_threads", "busy threads peak"),
                        ("users", "users (estimate)")):
        out.append(Change("rate", label, _load_value(before, name), _load_value(after, name)))
    found_before = {f["id"]: f["severity"] for f in before.get("findings") or []}
    found_after = {f["id"]: f["severity"] for f in after.get("findings") or []}
    for name in list(dict.fromkeys([*found_before, *found_after])):
        out.append(Change("finding", name, found_before.get(name), found_after.get(name)))
    return out


def _word(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def summary(before_dir: str, after_dir: str, changes: list[Change]) -> str:
    """The terminal summary: what changed, group by group, and the findings gone and new."""
    lines = [f"doctor: compared with {before_dir} (before) -> {after_dir} (after)"]
    for group in ("setting", "listener", "rate"):
        moved = [c for c in changes if c.group == group and c.changed]
        lines.append(f"  {group}s changed: " + (", ".join(f"{c.name} {_word(c.before)} -> {_word(c.after)}"
                                                            for c in moved) or "none"))
    gone = [c.name for c in changes if c.group == "finding" and c.after is None]
    new = [c.name for c in changes if c.group == "finding" and c.before is None]
    kept = [c.name for c in changes if c.group == "finding" and c.before is not None and c.after is not None]
    lines.append(f"  findings gone: {', '.join(gone) or 'none'}; new: {', '.join(new) or 'none'}; "
                 f"still there: {', '.join(kept) or 'none'}")
    return "\n".join(lines) + "\n"


def markdown(before_dir: str, after_dir: str, changes: list[Change]) -> str:
    """compare.md: a table a group, every figure, the changed ones marked."""
    out = [f"# Doctor: before and after", "", f"Before: `{before_dir}`; after: `{after_dir}`.", ""]
    for group in ("setting", "listener", "rate", "finding"):
        out += [f"## {group.capitalize()}s", "", "| name | before | after | changed |", "|---|---|---|---|"]
        out += [f"| {c.name} | {_word(c.before)} | {_word(c.after)} | {'yes' if c.changed else ''} |"
                for c in changes if c.group == group]
        out.append("")
    return "\n".join(out)


def write(before_dir: Path, after_dir: Path) -> str:
    """compare.json and compare.md into after_dir; returns the summary."""
    changes = compare(load(before_dir), load(after_dir))
    (after_dir / "compare.json").write_text(json.dumps(
        {"before": str(before_dir), "after": str(after_dir),
         "changes": [{**asdict(c), "changed": c.changed} for c in changes]}, indent=1) + "\n", encoding="utf-8")
    (after_dir / "compare.md").write_text(markdown(str(before_dir), str(after_dir), changes), encoding="utf-8")
    return summary(str(before_dir), str(after_dir), changes)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 4 and args[0] == "check":
        try:
            check(Path(args[1]), int(args[2]), args[3])
        except NotComparable as err:
            sys.stderr.write(f"doctor: {err}\n")
            return 2
        return 0
    if len(args) != 2:
        sys.stderr.write("usage: python3 -m ltsuite.doctorcompare BEFORE_DIR AFTER_DIR\n")
        return 2
    try:
        sys.stdout.write(write(Path(args[0]), Path(args[1])))
    except NotComparable as err:
        sys.stderr.write(f"doctor: {err}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
