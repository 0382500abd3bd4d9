"""The kernel knobs a matrix may set: env/sysctls.tsv, one table for the whole suite.

Each line: the knob, the side it applies to (server, client: that network namespace; global: refused,
the host has one value), the sysctl, the knob's type (envfile.sh's types; "-" for a global one), the
value a new network namespace has ("-" where it follows the host's memory) and its description. The runner reads the side and the sysctl (sysctls_load in scripts/lib/matrix.sh);
env/defaults.env's two kernel sections, where every knob gets its default (empty: the namespace's
own) and its type, are made from the table:

  python3 -m ltsuite.sysctls defaults [--write]   (make sysctls)

and so is scripts/ltsuite/sysctl_names.py, the knobs' keys and sysctls for what cannot read the
table (the doctor, which runs on a host with its script and ltsuite/ alone):

  python3 -m ltsuite.sysctls names [--write]      (make sysctls)

and compose/target.yml's sysctls, each server-side knob with a fixed default set to its knob's
value or, unset, that default (a container needs a value; "-" ones are left to the host):

  python3 -m ltsuite.sysctls compose [--write]    (make sysctls)

so adding a kernel knob is one line here, then `make sysctls`.
"""
from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "env" / "sysctls.tsv"
DEFAULTS = ROOT / "env" / "defaults.env"
NAMES = Path(__file__).resolve().parent / "sysctl_names.py"
COMPOSE = ROOT / "compose" / "target.yml"
#: compose/target.yml's sysctls block: from this line to the next key of the service.
COMPOSE_START = "    sysctls:\n"
COMPOSE_END = "    ulimits:\n"
SIDES = ("server", "client", "global")
HEADERS = {
    "server": "# --- Kernel, server namespace (see env/sysctls.tsv) -------------------------------",
    "client": "# --- Kernel, client namespace -------------------------------------------------------",
}
NOTE = "# (Made from env/sysctls.tsv by `make sysctls`: add or change a kernel knob there.)"
WIDTH = 77


class SysctlError(ValueError):
    """A line of the table that cannot be read, named by file and line."""


@dataclass(frozen=True)
class Knob:
    """One line of the table."""

    key: str
    side: str
    sysctl: str
    type: str
    default: str
    doc: str


def read(path: Path = TABLE) -> list[Knob]:
    """The table's knobs in its order; SysctlError naming the file, line and key for a bad line."""
    knobs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(None, 5)
        where = f"{path}:{number}: {fields[0]}"
        if len(fields) < 6:
            raise SysctlError(f"{where}: want KEY SIDE SYSCTL TYPE DEFAULT DESCRIPTION, got {len(fields)} field(s)")
        key, side, sysctl, type_, default, doc = fields
        if side not in SIDES:
            raise SysctlError(f"{where}: side '{side}' is not one of {', '.join(SIDES)}")
        knobs.append(Knob(key, side, sysctl, type_, default, doc.strip()))
    return knobs


def default_of(key: str, path: Path = TABLE) -> str:
    """The value a new network namespace has for KEY (the table's default column); KeyError for a
    knob the table does not have."""
    for knob in read(path):
        if knob.key == key:
            return knob.default
    raise KeyError(f"{path}: no knob {key}")


def defaults_sections(knobs: list[Knob]) -> str:
    """env/defaults.env's kernel sections: for each namespace side, its header, then each knob's
    description (wrapped at WIDTH), its type and an empty default."""
    parts = []
    for side in ("server", "client"):
        lines = [HEADERS[side], ""] + ([NOTE, ""] if side == "server" else [])
        for knob in (k for k in knobs if k.side == side):
            lines += textwrap.wrap(knob.doc, WIDTH, initial_indent="# ", subsequent_indent="# ",
                                   break_on_hyphens=False, break_long_words=False)
            lines += [f"# type: {knob.type}", f"{knob.key}="]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def region(text: str) -> tuple[int, int]:
    """Where defaults.env's kernel sections are: from the server header to the next section's
    header after the client one (the blank line before it stays outside)."""
    start = text.index(HEADERS["server"])
    client = text.index(HEADERS["client"], start)
    end = text.index("\n# --- ", client + len(HEADERS["client"]))
    return start, end


def with_sections(text: str, knobs: list[Knob]) -> str:
    """defaults.env's text with its kernel sections made from the table."""
    start, end = region(text)
    return text[:start] + defaults_sections(knobs) + text[end:]


def compose_sysctls(knobs: list[Knob]) -> str:
    """compose/target.yml's sysctls block: each server-side knob with a fixed default, its sysctl set
    to the knob's variable or that default (compose's ${VAR:-default}: empty means the default too,
    as in a matrix)."""
    return COMPOSE_START + "".join(f'      {k.sysctl}: "${{{k.key}:-{k.default}}}"\n'
                                   for k in knobs if k.side == "server" and k.default != "-")


def with_compose(text: str, knobs: list[Knob]) -> str:
    """compose/target.yml's text with its sysctls block made from the table."""
    start = text.index(COMPOSE_START)
    end = text.index(COMPOSE_END, start)
    return text[:start] + compose_sysctls(knobs) + text[end:]


def names_module(knobs: list[Knob]) -> str:
    """sysctl_names.py's text: (key, sysctl) of each namespace's knobs, in the table's order."""
    def pairs(side: str) -> str:
        return "".join(f"    ({k.key!r}, {k.sysctl!r}),\n" for k in knobs if k.side == side)
    return ('"""The kernel knobs of env/sysctls.tsv, (env key, sysctl), for what cannot read the table: the\n'
            "doctor runs on a host with its script and ltsuite/ alone. Made by `make sysctls`\n"
            '(ltsuite.sysctls names --write); tests/python/test_sysctls.py checks it is the table\'s."""\n'
            "\n#: The server's namespace.\nSERVER = (\n" + pairs("server") + ")\n"
            "#: The users' (k6's) namespace.\nCLIENT = (\n" + pairs("client") + ")\n")


def main(argv: list[str] | None = None) -> int:
    """defaults [--write]: print defaults.env as made from the table (--write: write it in place);
    names [--write]: the same for sysctl_names.py; compose [--write]: for compose/target.yml."""
    args = sys.argv[1:] if argv is None else argv
    targets = {"defaults": DEFAULTS, "names": NAMES, "compose": COMPOSE}
    if not args or args[0] not in targets or args[1:] not in ([], ["--write"]):
        print("usage: python3 -m ltsuite.sysctls defaults|names|compose [--write]", file=sys.stderr)
        return 2
    target = targets[args[0]]
    try:
        knobs = read()
        if args[0] == "defaults":
            made = with_sections(DEFAULTS.read_text(encoding="utf-8"), knobs)
        elif args[0] == "compose":
            made = with_compose(COMPOSE.read_text(encoding="utf-8"), knobs)
        else:
            made = names_module(knobs)
    except SysctlError as err:
        print(f"ltsuite.sysctls: {err}", file=sys.stderr)
        return 1
    if args[1:] == ["--write"]:
        tmp = target.with_name(f"{target.name}.tmp")
        tmp.write_text(made, encoding="utf-8")
        tmp.replace(target)
    else:
        sys.stdout.write(made)
    return 0


if __name__ == "__main__":
    sys.exit(main())
