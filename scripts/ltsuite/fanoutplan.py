"""The plan both fan-outs share (scripts/ssm-fanout.sh over AWS SSM, scripts/k6-operator.sh as a
k6-operator TestRun): their common options, the one cell they send with its settings, the checks
of its target, and its script as a k6 archive.

The matrix is resolved as for a local run (defaults < matrix < environment) and env/fanout.env is
read by the suite's typed reader, a key exported in the environment overriding it; both, and the
k6 archive, are the shell libraries' (scripts/fanout-cell.sh runs them). The decisions are here:
  - TARGET_URL is a knob of the cell: one http(s) URL, without a user or password (it is written
    into commands and results; credentials belong on the hosts). A target off 127.0.0.0/8 needs
    ALLOW_REMOTE_TARGET=1, as for a local run (run-matrix.sh check_target_url); a dry run only
    warns, since nothing is sent.
  - FANOUT_INFLUXDB_URL names its database by its path; both InfluxDB URLs are checked as TARGET_URL.
Bad input is a usage error (exit 2) naming the option or key, before anything is sent.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from .cellfiles import env_text, read_cell_env

ROOT = Path(__file__).resolve().parents[2]


class Stop(Exception):
    """The fan-out stops with MESSAGE (printed as "PROG: MESSAGE") and exit status CODE."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def prog() -> str:
    """The name messages start with: the entry script's (LT_PROG)."""
    return os.environ.get("LT_PROG", "ssm-fanout")


def usage_error(message: str) -> NoReturn:
    """Bad input: exit 2, before anything is sent."""
    raise Stop(message, 2)


def warn(message: str) -> None:
    """A problem that does not stop the run, on stderr (as common.sh's warn)."""
    print(f"{prog()}: warning: {message}", file=sys.stderr, flush=True)


def say(message: str) -> None:
    """Progress for the operator, on stderr so stdout stays data."""
    print(message, file=sys.stderr, flush=True)


class Parser(argparse.ArgumentParser):
    """argparse whose errors are the suite's usage errors ("PROG: why", exit 2)."""

    def error(self, message: str) -> NoReturn:
        usage_error(f"{message} (see --help)")


def positive(what: str):
    """An argparse type: an integer >= 1, else the usage error WHAT."""
    def check(text: str) -> int:
        if not re.fullmatch(r"[1-9][0-9]*", text):
            raise argparse.ArgumentTypeError(what)
        return int(text)
    return check


def common_parser(description: str) -> Parser:
    """The options both fan-outs take: --cell N (1 = the first) and the matrix file."""
    parser = Parser(prog=prog(), description=description, add_help=False)
    parser.add_argument("--cell", type=positive("--cell needs a cell number (1 = the first)"), default=1)
    parser.add_argument("matrix", nargs="?", default="")
    return parser


def matrix_path(text: str) -> Path:
    """The matrix file given, as an absolute path; a usage error when none or not a file."""
    if not text:
        usage_error("no matrix file given (e.g. env/matrices/default.matrix)")
    if not Path(text).is_file():
        usage_error(f"{text}: no such matrix file")
    return Path(text).resolve()


@dataclass
class Cell:
    """The one cell a fan-out sends: its values (cell.env), id and place in the matrix, the
    matrix's axes, the knobs set on the command line, and the fan-out's settings."""

    matrix: Path
    number: int
    of: int
    id: str
    work: Path
    env: dict[str, str]
    settings: dict[str, str]
    axes: list[str] = field(default_factory=list)
    overrides: list[str] = field(default_factory=list)
    git_commit: str = ""

    @property
    def env_path(self) -> Path:
        return self.work / "cell.env"

    @property
    def target_url(self) -> str:
        return self.env.get("TARGET_URL", "")


def shell(*args: str) -> subprocess.CompletedProcess:
    """scripts/fanout-cell.sh ARGS; its usage errors and aborts end the fan-out with its status
    (it printed why)."""
    done = subprocess.run([str(ROOT / "scripts" / "fanout-cell.sh"), *args], env={**os.environ, "LT_PROG": prog()})
    if done.returncode not in (0, 3):
        raise Stop("", done.returncode)
    return done


def resolve_cell(matrix: Path, number: int, work: Path) -> Cell:
    """Cell NUMBER of MATRIX, with the settings (scripts/fanout-cell.sh cell)."""
    shell("cell", str(matrix), str(number), str(work))
    info = read_cell_env(work / "cell-info.env") or {}
    return Cell(matrix=matrix, number=number, of=int(info["CELLS_TOTAL"]), id=info["CELL_ID"], work=work,
                env=read_cell_env(work / "cell.env") or {}, settings=read_cell_env(work / "settings.env") or {},
                axes=info.get("AXES", "").split(),
                overrides=[line for line in (work / "overrides.txt").read_text(encoding="utf-8").splitlines() if line],
                git_commit=info.get("GIT_COMMIT", ""))


def check_url(name: str, url: str) -> None:
    """URL is http(s) and carries no user or password (module docstring)."""
    if not re.match(r"https?://[^/]+", url):
        usage_error(f"{name}: '{url}' is not an http:// or https:// URL")
    if re.match(r"https?://[^/]*@", url):
        usage_error(f"{name}: the URL has a user or password in it; it would be written into the commands and "
                    "the results. Give credentials to the k6 machines another way (K6_INFLUXDB_USERNAME/"
                    "K6_INFLUXDB_PASSWORD in their environment)")


def url_host(url: str) -> str:
    """The host of URL, without a port (a bracketed IPv6 address keeps its brackets)."""
    host = re.split(r"[/?#]", url.split("://", 1)[-1])[0]
    match = re.fullmatch(r"(\[[^]]*\]|[^:]*)(:[0-9]+)?", host)
    return match.group(1) if match else host


def influx_db(url: str) -> str:
    """The database an InfluxDB v1 URL names by its path (http://HOST:8086/DATABASE)."""
    rest = url.split("://", 1)[-1]
    return re.split(r"[/?]", rest.split("/", 1)[1])[0] if "/" in rest else ""


def check_target(cell: Cell, dry_run: bool) -> str:
    """The cell's TARGET_URL, checked, and the InfluxDB URLs (module docstring)."""
    url = cell.target_url
    if not url:
        usage_error("TARGET_URL is empty: set it (in the matrix, or TARGET_URL=http://HOST:PORT) to the address "
                    "at which the k6 machines reach the target")
    if " " in url:
        usage_error("TARGET_URL: one target per run, not an axis")
    check_url("TARGET_URL", url)
    host = url_host(url)
    if not re.fullmatch(r"127\.[0-9.]+|localhost|\[::1\]", host) and cell.env.get("ALLOW_REMOTE_TARGET") != "1":
        if not dry_run:
            usage_error(f"TARGET_URL: {host} is not loopback; set ALLOW_REMOTE_TARGET=1 to send load there")
        warn(f"TARGET_URL: {host} is not loopback; the real run needs ALLOW_REMOTE_TARGET=1")
    influx = cell.settings.get("FANOUT_INFLUXDB_URL", "")
    if influx:
        check_url("FANOUT_INFLUXDB_URL", influx)
        if not influx_db(influx):
            usage_error(f"FANOUT_INFLUXDB_URL: '{influx}' names no database (expected http://HOST:8086/DATABASE)")
    if cell.settings.get("FANOUT_INFLUXDB_QUERY_URL"):
        check_url("FANOUT_INFLUXDB_QUERY_URL", cell.settings["FANOUT_INFLUXDB_QUERY_URL"])
    return url


@dataclass
class Script:
    """The cell's script as the instances get it (WORK/script.tar), with k6's tags and options
    (k6_args), the longest it can run, and whether it is a script of one's own."""

    k6_args: list[str]
    planned_seconds: int
    own_script: bool


class ScriptError(Exception):
    """The scenario does not load with the cell's values (the reason is k6's)."""


def prepare_script(cell: Cell, run_id: str) -> Script:
    """The k6 archive of the cell's script for RUN_ID (scripts/fanout-cell.sh script)."""
    if shell("script", str(cell.work), cell.target_url, run_id, cell.id).returncode == 3:
        raise ScriptError((cell.work / "script-error").read_text(encoding="utf-8").strip())
    info = env_text((cell.work / "script-info.env").read_text(encoding="utf-8"))
    return Script(k6_args=(cell.work / "k6-args.txt").read_text(encoding="utf-8").splitlines(),
                  planned_seconds=int(info["PLANNED_SECONDS"]), own_script=info.get("OWN_SCRIPT") == "1")
