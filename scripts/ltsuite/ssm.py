"""The fan-out's poll and collection over AWS SSM (scripts/ssm-fanout.sh), with boto3: the state of
every invocation that was sent, until each has ended or the run's deadline passes (those still
going then are cancelled and marked TimedOut); then each one's full output from S3.

  python3 -m ltsuite.ssm send MANIFEST COMMANDS_DIR --delivery-timeout S   (exit 3: the reason nothing was sent, on stdout)
  python3 -m ltsuite.ssm poll MANIFEST
  python3 -m ltsuite.ssm collect MANIFEST CELL_DIR [--root DIR]
  python3 -m ltsuite.ssm instance-modules DIR

send first checks the output bucket and, when fanout.scenario_files is "s3", uploads
COMMANDS_DIR/scenarios.tar.gz (storage_calls); every AWS call is an ltsuite.awscalls.Call. It
reads the run's manifest.json (fanout.region, fanout.profile, fanout.poll_interval_s,
fanout.deadline_epoch and the instances' command ids), polls, and writes the instances' status,
status_details and error back into it. While it waits it says which instances it waits for (on
stderr, once per change).

The rules (AWS Systems Manager API reference, GetCommandInvocation):
- Success, Failed, Cancelled and TimedOut are the states after which nothing changes.
- Right after a send SSM may not know the invocation yet (InvocationDoesNotExist): that is Pending.
- Any other error of the call (a throttled API after botocore's own retries, a network error) is
  "Unknown" with the message kept: polling goes on, the deadline still bounds it.
- An instance that never answers stays Pending/InProgress/Delayed until the deadline: it is then
  cancelled (best effort; a failed cancel is named in its error) and its status is TimedOut.

collect: GetCommandInvocation gives only 24,000 characters of stdout, so each invocation's full
stdout (and stderr) comes from S3, where SSM writes it under
<key prefix>/<command id>/<instance id>/.../stdout; the k6 summary is what the instance printed
between SUMMARY_BEGIN and SUMMARY_END (scripts/ssm-instance.sh), its latency histogram
(ltsuite.histogram, kept as histogram.json) what it printed between HISTOGRAM_BEGIN and
HISTOGRAM_END, k6's exit status the line "k6-fanout exit status: N". An instance fails (its error names why) when its invocation did not
end in Success, when its output cannot be read, or when the output holds no summary.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from .awscalls import (Call, Clients, cancel_call, get_call, head_bucket_call, invocation_call, invoke, list_call,
                       send_call, upload_call)

#: States after which an invocation does not change any more.
TERMINAL = frozenset({"Success", "Failed", "Cancelled", "TimedOut"})


@dataclass
class Invocation:
    """One instance's invocation of the fan-out's command, as the manifest records it."""

    instance_id: str
    command_id: str
    segment: str = ""
    status: str = ""
    status_details: str = ""
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        """No command sent, or an invocation in a terminal state."""
        return not self.command_id or self.status in TERMINAL

    def to_json(self) -> dict[str, Any]:
        """The manifest's entry (fields this module does not know are kept)."""
        return {**self.extra, "instance_id": self.instance_id, "segment": self.segment,
                "command_id": self.command_id, "status": self.status,
                "status_details": self.status_details, "error": self.error}

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> "Invocation":
        """An entry of the manifest's instances list."""
        known = {"instance_id", "segment", "command_id", "status", "status_details", "error"}
        return cls(instance_id=entry["instance_id"], command_id=entry.get("command_id") or "",
                   segment=entry.get("segment") or "", status=entry.get("status") or "",
                   status_details=entry.get("status_details") or "", error=entry.get("error") or "",
                   extra={k: v for k, v in entry.items() if k not in known})


def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def one_line(text: str, limit: int = 300) -> str:
    """TEXT on one line, at most LIMIT characters (for the manifest and the row's error)."""
    return " ".join(text.split())[:limit]


def invocation_state(client: Any, invocation: Invocation) -> tuple[str, str]:
    """(status, details) of one invocation from GetCommandInvocation (rules: module docstring).
    The details carry the exit code when SSM gives one."""
    try:
        answer = invoke(client, invocation_call(invocation.command_id, invocation.instance_id))
    except Exception as error:  # botocore's ClientError, or a connection error after its retries
        if _error_code(error) == "InvocationDoesNotExist":
            return "Pending", "not registered yet"
        return "Unknown", one_line(str(error))
    details = one_line(str(answer.get("StatusDetails") or ""))
    code = answer.get("ResponseCode")
    if code is not None and code != -1:
        details += f" (exit code {code})"
    return str(answer.get("Status") or "Unknown"), details


def cancel(client: Any, invocation: Invocation) -> bool:
    """Ask SSM to stop one invocation; False if the call failed."""
    try:
        invoke(client, cancel_call(invocation.command_id, invocation.instance_id))
    except Exception:  # the run already failed when this is needed: report, do not stop
        return False
    return True


def poll(client: Any, invocations: list[Invocation], *, deadline: float, interval: float,
         clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
         report: Callable[[str], None] = lambda text: None) -> list[Invocation]:
    """Poll every invocation that has not ended, every INTERVAL seconds, until all have or the
    clock passes DEADLINE (epoch seconds); then cancel those still going and mark them TimedOut
    (module docstring). Returns the invocations, updated in place."""
    last = ""
    while True:
        pending = []
        for inv in invocations:
            if inv.ended:
                continue
            inv.status, inv.status_details = invocation_state(client, inv)
            if not inv.ended:
                pending.append(inv)
        if not pending:
            return invocations
        if clock() >= deadline:
            at = time.strftime("%H:%M:%SZ", time.gmtime(deadline))
            for inv in pending:
                inv.error = f"instance {inv.instance_id}: timed out: still {inv.status} at the deadline ({at}); cancelled"
                if not cancel(client, inv):
                    inv.error += " (the cancel failed: check the instance)"
                inv.status = "TimedOut"
            return invocations
        text = " ".join(f"{inv.instance_id}:{inv.status}" for inv in pending)
        if text != last:
            report(f"waiting for {len(pending)} of {len(invocations)}: {text}")
            last = text
        sleep(interval)


def ssm_client(region: str = "", profile: str = "") -> Any:
    """A boto3 SSM client for the fan-out's region and profile (awscalls.Clients)."""
    return Clients(region, profile).client("ssm")


def _write_json(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2, ensure_ascii=False)
        out.write("\n")
    os.replace(tmp, path)


def poll_manifest(manifest: Path, client: Any = None, **kwargs: Any) -> list[Invocation]:
    """Poll the invocations a run's manifest lists and write their states back into it."""
    data = json.loads(manifest.read_text(encoding="utf-8"))
    fanout = data.get("fanout") or {}
    invocations = [Invocation.from_json(entry) for entry in data.get("instances") or []]
    client = client or ssm_client(fanout.get("region") or "", fanout.get("profile") or "")
    poll(client, invocations, deadline=float(fanout.get("deadline_epoch") or 0),
         interval=float(fanout.get("poll_interval_s") or 5), **kwargs)
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["instances"] = [inv.to_json() for inv in invocations]
    _write_json(manifest, data)
    return invocations


#: The signals that end a fan-out: ltsuite.fanoutmain catches them, and ends a
#: running ltsuite.ssm with SIGTERM.
ENDING_SIGNALS = frozenset({signal.SIGHUP, signal.SIGINT, signal.SIGTERM})


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold ENDING_SIGNALS back while the block runs (pthread_sigmask(2) on this process's one
    thread): one that arrives meanwhile stays pending and takes its usual effect as the block is
    left, not before. send() makes a SendCommand and its record in the manifest one step this
    way, so an invocation SSM accepted is never left running unrecorded, where on_exit could not
    cancel it. The price: a signal during a send waits for the call to end (botocore's connect and
    read timeouts and its retries bound it)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def comment(data: dict[str, Any], number: int) -> str:
    """The send's comment (shown in the SSM console): run, cell, instance NUMBER of all."""
    return (f"k6 fan-out {data.get('run_id')} {(data.get('cell') or {}).get('id')} "
            f"{number}/{len(data.get('instances') or [])}")


def instance_send_call(data: dict[str, Any], commands_dir: Path, instance_id: str, number: int,
                       delivery_timeout: int) -> Call:
    """The SendCommand of instance NUMBER (1-based) of the run whose manifest is DATA, its command
    from COMMANDS_DIR/params-<id>.json (ltsuite.ssmcommand)."""
    fanout = data.get("fanout") or {}
    return send_call(instance_id, str(commands_dir / f"params-{instance_id}.json"), fanout.get("s3_bucket") or "",
                     fanout.get("s3_key_prefix") or "", delivery_timeout, comment(data, number))


BUNDLE = "scenarios.tar.gz"


def storage_calls(data: dict[str, Any], commands_dir: Path) -> list[tuple[Call, str]]:
    """The calls before the sends, each with what its failure means: the output bucket's check,
    and the scenario files' upload when the manifest says they go through S3
    (fanout.scenario_files, chosen by FANOUT_MAX_COMMAND_BYTES)."""
    fanout = data.get("fanout") or {}
    bucket = fanout.get("s3_bucket") or ""
    calls = [(head_bucket_call(bucket), f"the output bucket s3://{bucket} cannot be reached")]
    if fanout.get("scenario_files") == "s3":
        key = bundle_key(fanout.get("s3_key_prefix") or "")
        calls.append((upload_call(str(commands_dir / BUNDLE), bucket, key),
                      f"cannot upload the scenario files to s3://{bucket}/{key}"))
    return calls


def bundle_key(key_prefix: str) -> str:
    """Where the scenario files go in S3 when they do not fit inline."""
    return f"{key_prefix.rstrip('/')}/{BUNDLE}"


def prepare_storage(clients: Clients, manifest: Path, commands_dir: Path) -> str:
    """Make storage_calls; "" when all went through, else why not (nothing was sent then)."""
    data = json.loads(manifest.read_text(encoding="utf-8"))
    for call, meaning in storage_calls(data, commands_dir):
        try:
            clients.run(call)
        except Exception as error:  # botocore's ClientError or a connection error
            return f"{meaning}: {one_line(str(error))}"
    return ""


def send(client: Any, manifest: Path, commands_dir: Path, delivery_timeout: int,
         report: Callable[[str], None] = lambda text: None,
         warn: Callable[[str], None] = lambda text: None) -> list[Invocation]:
    """One SendCommand per instance the manifest lists, with its parameters from
    COMMANDS_DIR/params-<id>.json (ltsuite.ssmcommand), the output to the run's S3 location. The
    manifest is written after each send, with the signals that end a run held back from the send
    until the write is done (signals_deferred), so whatever stops the run midway knows every
    command that was sent and can cancel it. A send that fails leaves that instance NotSent,
    with the reason as its error."""
    data = json.loads(manifest.read_text(encoding="utf-8"))
    fanout = data.get("fanout") or {}
    invocations = [Invocation.from_json(entry) for entry in data.get("instances") or []]
    for number, inv in enumerate(invocations, 1):
        call = instance_send_call(data, commands_dir, inv.instance_id, number, delivery_timeout)
        with signals_deferred():
            try:
                answer = invoke(client, call)
                inv.command_id, inv.status, inv.error = answer["Command"]["CommandId"], "Pending", ""
                report(f"{inv.instance_id}: segment {inv.segment}, command {inv.command_id}")
            except Exception as error:  # botocore's errors, a missing parameters file
                inv.command_id, inv.status = "", "NotSent"
                inv.error = f"instance {inv.instance_id}: send-command failed: {one_line(str(error))}"
                warn(inv.error)
            data["instances"] = [i.to_json() for i in invocations]
            _write_json(manifest, data)
    return invocations


SUMMARY_BEGIN = "=== k6-fanout summary begin ==="
SUMMARY_END = "=== k6-fanout summary end ==="
EXIT_PREFIX = "k6-fanout exit status: "


HISTOGRAM_BEGIN = "=== k6-fanout histogram begin ==="
HISTOGRAM_END = "=== k6-fanout histogram end ==="


def extract_block(stdout: str, begin: str, end: str) -> dict[str, Any] | None:
    """The JSON object printed between the lines BEGIN and END (the last such block), or None."""
    inside, lines, found = False, [], None
    for line in stdout.split("\n"):
        if line == end and inside:
            inside = False
            found = "\n".join(lines)
        if inside:
            lines.append(line)
        if line == begin:
            inside, lines = True, []
    try:
        block = json.loads(found) if found else None
    except ValueError:
        return None
    return block if isinstance(block, dict) else None


def extract_summary(stdout: str) -> dict[str, Any] | None:
    """The k6 summary printed between the summary markers, or None."""
    return extract_block(stdout, SUMMARY_BEGIN, SUMMARY_END)


def extract_histogram(stdout: str) -> dict[str, Any] | None:
    """The latency histogram printed between the histogram markers (ltsuite.histogram's JSON
    form, checked to be one), or None."""
    from .histogram import Histogram

    block = extract_block(stdout, HISTOGRAM_BEGIN, HISTOGRAM_END)
    try:
        return Histogram.from_json(block).to_json() if block is not None else None
    except (ValueError, KeyError, TypeError):
        return None


def k6_exit_status(stdout: str) -> str:
    """The k6 exit status the instance's command printed last ("" when none)."""
    found = [line[len(EXIT_PREFIX):] for line in stdout.split("\n") if line.startswith(EXIT_PREFIX)]
    return found[-1].strip() if found else ""


def output_prefix(key_prefix: str, invocation: Invocation) -> str:
    """Where SSM puts one invocation's output: <prefix>/<command id>/<instance id>/."""
    return f"{key_prefix.rstrip('/')}/{invocation.command_id}/{invocation.instance_id}/"


def fetch_output(s3: Any, bucket: str, key_prefix: str, invocation: Invocation, out_dir: Path) -> str:
    """Download the invocation's stdout (and stderr, if any) into OUT_DIR/stdout.txt and
    OUT_DIR/stderr.txt; "" when done, else why not."""
    prefix = output_prefix(key_prefix, invocation)
    try:
        keys = [item["Key"] for page in invoke(s3, list_call(bucket, prefix)) for item in page.get("Contents") or []]
    except Exception as error:  # botocore's ClientError or a connection error
        return f"cannot list s3://{bucket}/{prefix}: {one_line(str(error), 200)}"
    stdout = next((key for key in keys if key.endswith("/stdout")), None)
    if stdout is None:
        return f"no output at s3://{bucket}/{prefix} (the instance role needs s3:PutObject there)"
    try:
        (out_dir / "stdout.txt").write_bytes(invoke(s3, get_call(bucket, stdout))["Body"].read())
    except Exception as error:
        return f"cannot read s3://{bucket}/{stdout}: {one_line(str(error), 200)}"
    stderr = next((key for key in keys if key.endswith("/stderr")), None)
    if stderr is not None:
        try:
            (out_dir / "stderr.txt").write_bytes(invoke(s3, get_call(bucket, stderr))["Body"].read())
        except Exception:  # stderr is for reading by people; stdout is what counts
            pass
    return ""


def collect_one(s3: Any, bucket: str, key_prefix: str, inv: Invocation, out_dir: Path, shown_dir: str) -> None:
    """Fetch one invocation's output into OUT_DIR, write OUT_DIR/summary.json, and set its error
    (module docstring). SHOWN_DIR is OUT_DIR as the error names it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if not inv.command_id:
        return
    details = f" ({inv.status_details})" if inv.status_details else ""
    why = fetch_output(s3, bucket, key_prefix, inv, out_dir)
    if why:
        if inv.error:
            return
        inv.error = (f"instance {inv.instance_id}: Success, but {why}" if inv.status == "Success" else
                     f"instance {inv.instance_id}: invocation {inv.status}{details}, and {why}")
        return
    stdout = (out_dir / "stdout.txt").read_text(encoding="utf-8", errors="replace")
    summary = extract_summary(stdout)
    if summary is not None:
        _write_json(out_dir / "summary.json", summary)
    histogram = extract_histogram(stdout)
    (out_dir / "histogram.json").unlink(missing_ok=True)
    if histogram is not None:
        _write_json(out_dir / "histogram.json", histogram)
    if inv.error:
        return
    status = k6_exit_status(stdout)
    if inv.status != "Success":
        inv.error = (f"instance {inv.instance_id}: invocation {inv.status}{details}"
                     f"{f', k6 exit status {status}' if status else ''}; see {shown_dir}/stdout.txt")
    elif summary is None:
        inv.error = (f"instance {inv.instance_id}: its output has no k6 summary"
                     f"{f' (k6 exit status {status})' if status else ''}; see {shown_dir}/stdout.txt")


def s3_client(region: str = "", profile: str = "") -> Any:
    """A boto3 S3 client, as ssm_client."""
    return Clients(region, profile).client("s3")


def collect_manifest(manifest: Path, cell_dir: Path, root: Path | None = None, s3: Any = None) -> list[Invocation]:
    """Collect every sent invocation the manifest lists into CELL_DIR/instances/<id>/ and write
    their errors back. An error found by an earlier collect is judged again; those of an
    instance never sent to, or timed out by the poller, stay."""
    data = json.loads(manifest.read_text(encoding="utf-8"))
    fanout = data.get("fanout") or {}
    invocations = [Invocation.from_json(entry) for entry in data.get("instances") or []]
    s3 = s3 or s3_client(fanout.get("region") or "", fanout.get("profile") or "")
    for inv in invocations:
        if inv.command_id and inv.status != "TimedOut":
            inv.error = ""
        out_dir = cell_dir / "instances" / inv.instance_id
        shown = str(out_dir.relative_to(root)) if root and out_dir.is_relative_to(root) else str(out_dir)
        collect_one(s3, fanout.get("s3_bucket") or "", fanout.get("s3_key_prefix") or "", inv, out_dir, shown)
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["instances"] = [inv.to_json() for inv in invocations]
    _write_json(manifest, data)
    return invocations


#: The modules an instance reduces k6's samples with (python3 -m ltsuite.histogram reduce).
INSTANCE_MODULES = ("histogram.py", "latency.py")


def write_instance_modules(out_dir: Path) -> None:
    """OUT_DIR/ltsuite/: the modules an instance needs to reduce k6's samples to its latency
    histogram, as the same code without docstrings and comments (ast.unparse), so they add
    about 3.5 KB to a command sent inline instead of 5.5 (every byte there counts against
    FANOUT_MAX_COMMAND_BYTES). No __init__.py: Python 3.3+ imports the directory as a
    namespace package."""
    import ast

    (out_dir / "ltsuite").mkdir(parents=True, exist_ok=True)
    for name in INSTANCE_MODULES:
        tree = ast.parse((Path(__file__).parent / name).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and body
                    and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]
        (out_dir / "ltsuite" / name).write_text(ast.unparse(tree) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m ltsuite.ssm", description="Poll and collect a fan-out.")
    sub = parser.add_subparsers(dest="command", required=True)
    send_parser = sub.add_parser("send", help="send each instance its command")
    send_parser.add_argument("manifest", type=Path)
    send_parser.add_argument("commands_dir", type=Path)
    send_parser.add_argument("--delivery-timeout", type=int, required=True)
    poll_parser = sub.add_parser("poll", help="poll until every invocation has ended or the deadline")
    poll_parser.add_argument("manifest", type=Path)
    collect_parser = sub.add_parser("collect", help="fetch every invocation's output and summary from S3")
    collect_parser.add_argument("manifest", type=Path)
    collect_parser.add_argument("cell_dir", type=Path)
    collect_parser.add_argument("--root", type=Path, help="paths in errors are shown relative to it")
    modules_parser = sub.add_parser("instance-modules", help="write the modules an instance reduces k6's samples with")
    modules_parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "instance-modules":
        write_instance_modules(args.out_dir)
    elif args.command == "send":
        fanout = json.loads(args.manifest.read_text(encoding="utf-8")).get("fanout") or {}
        prog = os.environ.get("LT_PROG", "ssm-fanout")
        clients = Clients(fanout.get("region") or "", fanout.get("profile") or "")
        why = prepare_storage(clients, args.manifest, args.commands_dir)
        if why:
            # Nothing was sent: the reason on stdout, for the manifest (ltsuite.fanoutmain finish_failed).
            print(why)
            return 3
        send(clients.client("ssm"), args.manifest, args.commands_dir,
             args.delivery_timeout, report=lambda text: print(f"  {text}", file=sys.stderr, flush=True),
             warn=lambda text: print(f"{prog}: warning: {text}", file=sys.stderr, flush=True))
    elif args.command == "poll":
        poll_manifest(args.manifest, report=lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    else:
        collect_manifest(args.manifest, args.cell_dir, args.root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
