"""The fan-out's steps around the sends (ltsuite.fanoutmain), with boto3 as the one AWS client
(ltsuite.awscalls): finding the k6 instances (find_targets: --instances, else the running ones whose
tag matches, sorted; a tag filter that is not KEY=PATTERN is a usage error before any call), ending a run that stopped
midway, and the dry run's plan, which prints the very calls (awscalls.Call) the real run makes.

end_run: the run (its manifest: state of every instance, ltsuite.ssm.Invocation) ended before it
finished, for the reason WHY ("interrupted by SIGHUP", "stopped by an error (exit status 1)").
Every invocation that was sent and has not ended is cancelled, so no instance goes on loading the
target unattended; each is named in its error (a failed cancel says so: check the instance). The
warning the manifest gets is returned.
"""
from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from .awscalls import (Call, Clients, UsageError, cancel_call, describe_call, get_call, instance_ids,
                       invocation_call, list_call)
from .ssm import (HISTOGRAM_BEGIN, HISTOGRAM_END, SUMMARY_BEGIN, SUMMARY_END, Invocation, cancel,
                  instance_send_call, one_line, output_prefix, storage_calls, _write_json)
from .fanoutplan import Cell, Stop, warn


def find_instances(clients: Clients, tag_filter: str) -> list[str]:
    """The running instances whose tag matches TAG_FILTER (KEY=PATTERN), sorted."""
    return instance_ids(clients.run(describe_call(tag_filter)))


@contextmanager
def attempts(count: int) -> Iterator[None]:
    """AWS_MAX_ATTEMPTS=COUNT unless set, for the calls of the block only."""
    before = os.environ.get("AWS_MAX_ATTEMPTS")
    os.environ.setdefault("AWS_MAX_ATTEMPTS", str(count))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("AWS_MAX_ATTEMPTS", None)


def find_targets(args, cell: Cell) -> tuple[list[str], str]:
    """The instances (--instances, or the tag lookup) and how they were found, for the dry run.
    A dry run whose lookup fails (no AWS reachable) goes on with placeholders."""
    if args.instances:
        return args.instances, "skipped: --instances given"
    s = cell.settings
    try:
        with attempts(1 if args.dry_run else 3):
            ids = find_instances(Clients(s.get("FANOUT_REGION", ""), s.get("FANOUT_PROFILE", ""), args.dry_run),
                                 s.get("FANOUT_TAG_FILTER", ""))
    except UsageError as error:
        raise Stop(str(error), 2) from None
    except Exception as error:  # botocore's errors: the reason, on one line
        why = one_line(str(error))
        if not args.dry_run:
            raise Stop(f"the instance lookup (ec2.describe_instances) failed: {why}") from None
        warn(f"the instance lookup failed ({why}); showing the plan for 2 placeholder instances "
             "(give --instances ID,ID for your fleet)")
        return ["i-placeholder1", "i-placeholder2"], f"this call ran and failed: {why}"
    if not ids:
        region = s.get("FANOUT_REGION", "")
        raise Stop(f"no running instance has the tag {s.get('FANOUT_TAG_FILTER')}{' in ' + region if region else ''}; "
                   "start the k6 machines (or set FANOUT_TAG_FILTER / FANOUT_REGION)")
    return ids, "read-only; this call did run"


def end_run(client: Any, manifest: Path, why: str,
            warn: Callable[[str], None] = lambda text: None) -> str:
    """Cancel every sent invocation of the run that has not ended, write their states and errors
    into MANIFEST, and return the warning that records how the run ended (module docstring)."""
    data = json.loads(manifest.read_text(encoding="utf-8"))
    invocations = [Invocation.from_json(entry) for entry in data.get("instances") or []]
    sent = [inv for inv in invocations if inv.command_id]
    if not sent:
        return f"the fan-out was {why} before any command was sent"
    cancelled, failed = 0, []
    for inv in sent:
        if inv.ended:
            continue
        if cancel(client, inv):
            inv.error = f"instance {inv.instance_id}: cancelled: the fan-out was {why} before the invocation ended"
            inv.status = "Cancelled"
            cancelled += 1
        else:
            inv.error = (f"instance {inv.instance_id}: the fan-out was {why} before the invocation ended, "
                         "and the cancel failed: check the instance")
            failed.append(inv.instance_id)
            warn(f"could not cancel the command on {inv.instance_id}: check the instance")
    data["instances"] = [inv.to_json() for inv in invocations]
    _write_json(manifest, data)
    text = f"the fan-out was {why} after the commands were sent: {cancelled} invocation(s) cancelled"
    if failed:
        text += f"; the cancel failed on {' '.join(failed)}: check those instances"
    return text


#: Where SSM writes the stdout of AWS-RunShellScript's one step, under an invocation's prefix.
STDOUT_KEY = "awsrunShellScript/0.awsrunShellScript/stdout"


def planned_calls(data: dict[str, Any], commands_dir: Path, delivery_timeout: int) -> dict[str, list[Call]]:
    """The calls a run of the manifest DATA makes, by step: lookup, storage, send (one per
    instance, in order), poll, cancel, fetch (the last three for the first instance, with
    "<command-id>" for the id SSM gives). The real run builds each with the same function."""
    fanout = data.get("fanout") or {}
    instances = [entry["instance_id"] for entry in data.get("instances") or []]
    first = Invocation(instance_id=instances[0], command_id="<command-id>")
    bucket, prefix = fanout.get("s3_bucket") or "", fanout.get("s3_key_prefix") or ""
    return {
        "lookup": [describe_call(fanout.get("tag_filter") or "")],
        "storage": [call for call, _ in storage_calls(data, commands_dir)],
        "send": [instance_send_call(data, commands_dir, iid, n, delivery_timeout) for n, iid in enumerate(instances, 1)],
        "poll": [invocation_call(first.command_id, first.instance_id)],
        "cancel": [cancel_call(first.command_id, first.instance_id)],
        "fetch": [list_call(bucket, output_prefix(prefix, first)),
                  get_call(bucket, output_prefix(prefix, first) + STDOUT_KEY)],
    }


def plan_text(data: dict[str, Any], commands_dir: Path, *, lookup: str, delivery_timeout: int, run_timeout: int,
              cells_total: int) -> str:
    """The dry run's report: each step, its boto3 calls, and each instance's command."""
    fanout = data.get("fanout") or {}
    calls = planned_calls(data, commands_dir, delivery_timeout)
    entries = data.get("instances") or []
    cell = data.get("cell") or {}
    where = Clients(fanout.get("region") or "", fanout.get("profile") or "").describe()
    start = int(fanout.get("start_at_epoch") or 0)
    out = [f"# Dry run: nothing is sent. Run {data.get('run_id')}, cell {cell.get('id')} "
           f"({cell.get('number')} of {cells_total}), {len(entries)} instance(s).",
           f"# The files named below are kept in {commands_dir}",
           f"# Every AWS call goes through boto3 ({where}), one a line: client.operation(parameters).",
           "", f"# 1. Find the k6 instances ({lookup}):", calls["lookup"][0].line(),
           f"   -> {' '.join(e['instance_id'] for e in entries)}",
           "", "# 2. Check that the output bucket exists:", calls["storage"][0].line()]
    if len(calls["storage"]) > 1:
        out += ["", "# 2b. The commands are too large inline: ship the scenario files through S3:",
                calls["storage"][1].line()]
    out += ["", f"# 3. One send per instance (each has its own segment); all start at "
                f"{time.strftime('%H:%M:%SZ', time.gmtime(start))} (epoch {start})."]
    for entry, call in zip(entries, calls["send"]):
        command = commands_dir / f"command-{entry['instance_id']}.sh"
        out += ["", f"## Instance {entry['instance_id']}: segment {entry.get('segment')}. Its command ({command}):",
                command.read_text(encoding="utf-8").rstrip("\n"), "## Sent with:", call.line()]
    out += ["", f"# 4. Poll every {fanout.get('poll_interval_s')}s until every invocation ends "
                f"(at most {run_timeout}s), per instance:", calls["poll"][0].line(),
            "#    and for one that has not ended by then:", calls["cancel"][0].line(),
            "", f'# 5. Fetch each full stdout from S3 (summary between "{SUMMARY_BEGIN}" and "{SUMMARY_END}"):',
            *(call.line() for call in calls["fetch"]), ""]
    last = f'# 6. Percentiles from the merge of the latency histograms the instances print between "{HISTOGRAM_BEGIN}" and "{HISTOGRAM_END}"'
    if fanout.get("influxdb_url"):
        out += [last + ";", f"#    from InfluxDB's raw samples ({fanout.get('influxdb_query_url') or fanout.get('influxdb_url')}) "
                            "if some instance shipped none."]
    else:
        out += [last + " (empty if some instance shipped none)."]
    return "\n".join(out) + "\n"
