"""The fan-out's poll over AWS SSM (scripts/ssm-fanout.sh), with boto3: the state of every
invocation that was sent, until each has ended or the run's deadline passes; those still going then
are cancelled and marked TimedOut.

  python3 -m ltsuite.ssm poll MANIFEST

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
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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
        answer = client.get_command_invocation(CommandId=invocation.command_id, InstanceId=invocation.instance_id)
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
        client.cancel_command(CommandId=invocation.command_id, InstanceIds=[invocation.instance_id])
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
    """A boto3 SSM client for the fan-out's region and profile (both optional). The endpoint,
    retries and timeouts come from the usual AWS settings (AWS_ENDPOINT_URL, AWS_MAX_ATTEMPTS)."""
    import boto3  # installed with the AWS tools (make aws-tools)

    session = boto3.session.Session(profile_name=profile or None, region_name=region or None)
    return session.client("ssm")


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m ltsuite.ssm", description="Poll a fan-out's invocations.")
    sub = parser.add_subparsers(dest="command", required=True)
    poll_parser = sub.add_parser("poll", help="poll until every invocation has ended or the deadline")
    poll_parser.add_argument("manifest", type=Path)
    args = parser.parse_args(argv)
    poll_manifest(args.manifest, report=lambda text: print(f"  {text}", file=sys.stderr, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
