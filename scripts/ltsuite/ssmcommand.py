"""What each k6 instance of a fan-out runs (scripts/ssm-fanout.sh): one POSIX sh command per
instance, its settings as shell assignments and k6's arguments as `set --`, then
scripts/ssm-instance.sh as it is in the repo (all the logic); and SendCommand's parameters for it.

  python3 -m ltsuite.ssmcommand DIR --instances ID,ID... --run-id R --cell-id C --start-at EPOCH
      --cell-env FILE --k6-args FILE --bundle FILE --target-url URL --timeout S --max-bytes N
      --bucket B --key-prefix P [--workdir D] [--k6-path K] [--influxdb-url U] [--keep-samples 0|1]
      [--region R]

writes DIR/command-<id>.sh, DIR/params-<id>.json and DIR/instances.json (each instance's id and
segment, the manifest's list, nothing sent yet), and prints how the scenario files travel:
"inline" (base64 in every command) or "s3" (when a command's parameters would exceed MAX_BYTES,
FANOUT_MAX_COMMAND_BYTES: they go once to s3://B/P/scenarios.tar.gz and each instance copies
them with its own AWS CLI, in the region but never with the operator's profile). Exit 1 when a
command is too large even then.

The rules of the command (docs/fanout.md, "How it works"): instance i of N gets the execution
segment i/N:(i+1)/N and the same sequence as every other (ltsuite.fanout); the script's own tags
and options (k6_script_args) and its instance's tag; k6's samples to samples.json.gz (the
instance reduces them to its latency histogram); the cell's knobs as -e, but for the values the
command sets itself (TARGET_URL, BASE_URL, SUMMARY_FILE, RUN_ID, CELL_ID).
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .columns import trend_metrics
from .fanout import segment, segment_sequence
from .ssm import BUNDLE, HISTOGRAM_BEGIN, HISTOGRAM_END, SUMMARY_BEGIN, SUMMARY_END, bundle_key

INSTANCE_SCRIPT = Path(__file__).resolve().parents[1] / "ssm-instance.sh"
#: The cell's knobs the command sets itself.
OWN_VALUES = re.compile(r"^(TARGET_URL|BASE_URL|SUMMARY_FILE|RUN_ID|CELL_ID)=")
PLAIN = re.compile(r"[A-Za-z0-9_./:=@%+,-]+")


def sh_quote(word: str) -> str:
    """WORD as one POSIX shell word: as it is when made only of characters no shell treats
    specially, else single-quoted (a quote inside becomes '\\'')."""
    return word if PLAIN.fullmatch(word) else "'" + word.replace("'", "'\\''") + "'"


def sh_line(*words: str) -> str:
    """The words as one command line a shell reads back into the same words."""
    return " ".join(sh_quote(word) for word in words)


def assign(name: str, value: str) -> str:
    """A shell assignment of VALUE, quoted for any sh."""
    return f"{name}={sh_quote(value)}"


@dataclass
class Settings:
    """What every instance's command shares (env/fanout.env's FANOUT_* and the cell's run)."""

    run_id: str
    cell_id: str
    start_at: int
    cell_env: str
    k6_args: list[str]
    bundle: Path
    target_url: str
    workdir: str = "/var/tmp/k6-fanout"
    k6_path: str = "/usr/local/bin/k6"
    influxdb_url: str = ""
    keep_samples: str = "0"
    region: str = ""


def k6_lines(s: Settings, instance: str, index: int, count: int, workdir: str) -> list[str]:
    """k6's arguments, one line an option with its value (module docstring)."""
    lines = [sh_line("run", "--no-usage-report", "--address", "", "--include-system-env-vars=false"),
             sh_line("--execution-segment", segment(index, count)),
             sh_line("--execution-segment-sequence", segment_sequence(count))]
    args = [*s.k6_args, "--tag", f"instance={instance}"]
    i = 0
    while i < len(args):
        if args[i] == "--tag" and i + 1 < len(args):
            lines.append(sh_line("--tag", args[i + 1]))
            i += 2
        else:
            lines.append(sh_line(args[i]))
            i += 1
    lines.append(sh_line("--out", "json=samples.json.gz"))
    if s.influxdb_url:
        lines.append(sh_line("--out", f"influxdb={s.influxdb_url}"))
    lines += [sh_line("-e", line) for line in s.cell_env.split("\n") if line and not OWN_VALUES.match(line)]
    lines += [sh_line("-e", f"TARGET_URL={s.target_url}"), sh_line("-e", f"BASE_URL={s.target_url}"),
              sh_line("-e", f"SUMMARY_FILE={workdir}/summary.json"), sh_line("-e", f"RUN_ID={s.run_id}"),
              sh_line("-e", f"CELL_ID={s.cell_id}"), sh_line("script.tar")]
    return lines


def instance_command(s: Settings, instance: str, index: int, count: int, bundle_s3_uri: str = "") -> str:
    """The command instance INDEX (0-based) of COUNT runs. BUNDLE_S3_URI empty: the scenario files
    go inline (base64)."""
    workdir = f"{s.workdir.rstrip('/')}/{s.run_id}/{s.cell_id}/{instance}"
    data = s.bundle.read_bytes()
    aws_args = "\n".join(["--region", s.region]) if bundle_s3_uri and s.region else ""
    head = [f"# k6 fan-out: run {s.run_id}, cell {s.cell_id}, instance {index + 1} of {count} ({instance}), "
            f"segment {segment(index, count)}",
            assign("LT_WORKDIR", workdir), assign("LT_K6", s.k6_path),
            assign("LT_BUNDLE_B64", "" if bundle_s3_uri else base64.b64encode(data).decode()),
            assign("LT_BUNDLE_S3", bundle_s3_uri), assign("LT_AWS_ARGS", aws_args),
            assign("LT_BUNDLE_SHA256", hashlib.sha256(data).hexdigest()),
            assign("LT_CELL_ENV", s.cell_env.rstrip("\n")), assign("LT_START_AT", str(s.start_at)),
            assign("LT_SUMMARY_BEGIN", SUMMARY_BEGIN), assign("LT_SUMMARY_END", SUMMARY_END),
            assign("LT_HISTOGRAM_BEGIN", HISTOGRAM_BEGIN), assign("LT_HISTOGRAM_END", HISTOGRAM_END),
            assign("LT_KEEP_SAMPLES", s.keep_samples or "0"), assign("LT_TRENDS", ",".join(trend_metrics()))]
    k6 = "set --" + "".join(f" \\\n  {line}" for line in k6_lines(s, instance, index, count, workdir))
    return "\n".join(head) + "\n" + k6 + "\n" + INSTANCE_SCRIPT.read_text(encoding="utf-8")


def params(command: str, timeout: int) -> dict[str, list[str]]:
    """SendCommand's Parameters for AWS-RunShellScript: the command as its list of lines, and its
    execution timeout."""
    lines = command.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return {"commands": lines, "executionTimeout": [str(timeout)]}


def params_text(command: str, timeout: int) -> str:
    """params() as the JSON file the send reads."""
    return json.dumps(params(command, timeout), indent=2, ensure_ascii=False) + "\n"


class TooLarge(ValueError):
    """A command over FANOUT_MAX_COMMAND_BYTES even with the scenario files in S3."""


def write_commands(out: Path, s: Settings, instances: list[str], *, timeout: int, max_bytes: int, bucket: str,
                   key_prefix: str) -> str:
    """Every instance's command and parameters into OUT (module docstring); "inline" or "s3"."""
    def write(uri: str) -> int:
        largest = 0
        for index, instance in enumerate(instances):
            command = instance_command(s, instance, index, len(instances), uri)
            text = params_text(command, timeout)
            (out / f"command-{instance}.sh").write_text(command, encoding="utf-8")
            (out / f"params-{instance}.json").write_text(text, encoding="utf-8")
            largest = max(largest, len(text.encode()))
        return largest

    entries = [{"instance_id": i, "segment": segment(n, len(instances)), "command_id": "", "status": "",
                "status_details": "", "error": ""} for n, i in enumerate(instances)]
    (out / "instances.json").write_text(json.dumps(entries, indent=2) + "\n", encoding="utf-8")
    if write("") <= max_bytes:
        return "inline"
    size = write(f"s3://{bucket}/{bundle_key(key_prefix)}")
    if size > max_bytes:
        raise TooLarge(f"a command is {size} bytes even with the scenario files in S3 "
                       f"(FANOUT_MAX_COMMAND_BYTES={max_bytes})")
    return "s3"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m ltsuite.ssmcommand", description=__doc__.split("\n")[0])
    parser.add_argument("dir", type=Path)
    for name in ("instances", "run-id", "cell-id", "cell-env", "k6-args", "bundle", "target-url", "bucket",
                 "key-prefix"):
        parser.add_argument(f"--{name}", required=True)
    for name in ("start-at", "timeout", "max-bytes"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--workdir", default="/var/tmp/k6-fanout")
    parser.add_argument("--k6-path", default="/usr/local/bin/k6")
    parser.add_argument("--influxdb-url", default="")
    parser.add_argument("--keep-samples", default="0")
    parser.add_argument("--region", default="")
    args = parser.parse_args(argv)
    k6_args = Path(args.k6_args).read_text(encoding="utf-8").split("\n")
    settings = Settings(run_id=args.run_id, cell_id=args.cell_id, start_at=args.start_at,
                        cell_env=Path(args.cell_env).read_text(encoding="utf-8"),
                        k6_args=k6_args[:-1] if k6_args and k6_args[-1] == "" else k6_args,
                        bundle=Path(args.bundle), target_url=args.target_url, workdir=args.workdir,
                        k6_path=args.k6_path, influxdb_url=args.influxdb_url, keep_samples=args.keep_samples,
                        region=args.region)
    try:
        print(write_commands(args.dir, settings, args.instances.split(","), timeout=args.timeout,
                             max_bytes=args.max_bytes, bucket=args.bucket, key_prefix=args.key_prefix))
    except TooLarge as error:
        print(f"{os.environ.get('LT_PROG', 'ssm-fanout')}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
