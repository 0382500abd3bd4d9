"""scripts/ssm-fanout.sh: one matrix cell on every tagged k6 instance via AWS SSM, split with k6
execution segments, into results/<run-id>/ (docs/fanout.md).

  ssm-fanout.sh [--dry-run] [--cell N] [--instances ID,ID...] [--no-wait] MATRIX_FILE
  ssm-fanout.sh --collect RESULTS_DIR

Steps: the cell and its checks (ltsuite.fanoutplan, shared with k6-operator) -> the instances
(--instances, or the tag lookup) -> the run's directory and manifest (ltsuite.fanoutmanifest) ->
the scenario as a k6 archive -> one command per instance (ltsuite.ssmcommand) -> the bucket's
check and one send per instance -> poll until every invocation ends or the deadline -> each full
stdout from S3 -> the instances' rows and the cell's (ltsuite.fanoutrow) -> results.md.
Every AWS call is a boto3 call (ltsuite.awscalls); the send, the poll and the collection run as
`python -m ltsuite.ssm` children, each writing the instances' state into the manifest as it goes.

--dry-run writes the commands and a manifest as the real run would, in a directory of its own,
and prints the boto3 calls the run would make and the commands (ltsuite.fanoutrun.plan_text); its
only AWS call is the read-only lookup (skipped with --instances; if it fails, two placeholders).

Whatever ends a run after its directory exists (SIGHUP, SIGINT, SIGTERM, an error) cancels every
sent invocation that has not ended (ltsuite.fanoutrun.end_run) and finishes the manifest
"interrupted" (a signal: exit 128 + its number) or "failed"; what was collected stays.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from . import fanoutmanifest as manifest
from .fanoutmanifest import shown
from .fanoutplan import (ROOT, Cell, Script, ScriptError, Stop, check_target, common_parser, matrix_path,
                         prepare_script, prog, resolve_cell, say, usage_error, warn)
from .fanoutrun import find_targets
from .fanoutsend import build_commands, delivery_timeout, key_prefix, run_timeout, write_plan
from .cellfiles import read_json

ENDING = {signal.SIGHUP: "SIGHUP", signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


class Ended(BaseException):
    """A signal in ENDING ended the run."""

    def __init__(self, signum: int) -> None:
        super().__init__(ENDING[signum])
        self.signum = signum


@dataclass
class Run:
    """The state of this fan-out: its work directory, its results directory once made, whether it
    finished, what ended it, and the ltsuite.ssm child running now."""

    work: Path
    dir: Path | None = None
    finished: bool = False
    ended_by: str = ""
    child: subprocess.Popen | None = None
    instances: list[str] = field(default_factory=list)


def parse(argv: list[str]):
    """The options (the shared ones, ltsuite.fanoutplan.common_parser, and the SSM fan-out's)."""
    parser = common_parser("Run one matrix cell on every tagged k6 instance via AWS SSM.")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--no-wait", action="store_true")
    parser.add_argument("--instances", default="")
    parser.add_argument("--collect", type=Path)
    args = parser.parse_args(argv)
    if args.collect is not None:
        if args.matrix or args.dry_run:
            usage_error("--collect takes only the results directory")
        if not (args.collect / "manifest.json").is_file():
            usage_error(f"{args.collect}: no manifest.json there")
        return args
    args.matrix = matrix_path(args.matrix)
    ids = [i for i in args.instances.split(",") if i] if args.instances else []
    for iid in ids:
        if not re.fullmatch(r"m?i-[A-Za-z0-9]+", iid):
            usage_error(f"'{iid}' is not an instance id (i-... or mi-...)")
    args.instances = sorted(set(ids))
    return args


def create_run_dir(run: Run, run_id: str, cell: Cell) -> str:
    """results/<run-id>/ (never an existing one: -2, -3, ... appended), its manifest, the cell's
    env, and results/latest; the run id it made."""
    results = Path(os.environ.get("LT_RESULTS_DIR") or ROOT / "results")
    results.mkdir(parents=True, exist_ok=True)
    made, suffix = run_id, 1
    while True:
        try:
            (results / made).mkdir()
            break
        except FileExistsError:
            suffix += 1
            made = f"{run_id}-{suffix}"
    run.dir = results / made
    (run.dir / "cells" / cell.id).mkdir(parents=True)
    shutil.copyfile(cell.env_path, run.dir / "cells" / cell.id / "cell.env")
    manifest.write(run.dir, manifest.new_manifest(cell, made, key_prefix(cell.settings, made, cell.id)))
    latest = results / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(made)
    return made


def run_python(run: Run, *args: str) -> None:
    """python -m ltsuite.ssm ARGS as a child (it writes the instances' state into the manifest), so
    a signal here can stop it (end_child) and cancel what it sent. Exit 3 of send: nothing was
    sent, for the reason it printed."""
    out = run.work / "python.out"
    with out.open("w", encoding="utf-8") as stdout:
        # In a process group of its own: a Ctrl-C at the terminal reaches this run only, which
        # stops the child itself (end_child) before it cancels and records.
        run.child = subprocess.Popen([sys.executable, "-m", "ltsuite.ssm", *args], stdout=stdout,
                                     env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")}, process_group=0)
        status = run.child.wait()
    run.child = None
    status = 128 - status if status < 0 else status
    if status == 3:
        finish_failed(run, out.read_text(encoding="utf-8").strip())
    if status != 0:
        raise Stop(f"ltsuite.ssm {args[0]} failed (exit status {status})")


def finish_failed(run: Run, message: str) -> None:
    """End a run that failed before anything was sent."""
    assert run.dir is not None
    manifest.add_warning(run.dir, message)
    manifest.finish(run.dir, "failed")
    run.finished = True
    raise Stop(message)


def start(run: Run, args) -> None:
    """A new fan-out (module docstring): planned, then dry-run, sent, or sent and collected."""
    cell = resolve_cell(args.matrix, args.cell, run.work)
    check_target(cell, args.dry_run)
    if not cell.settings.get("FANOUT_S3_BUCKET"):
        usage_error("FANOUT_S3_BUCKET is empty: SSM needs an S3 output location to return each instance's full "
                    "output (its API gives only 24,000 characters); set it in env/fanout.env or as FANOUT_S3_BUCKET=NAME")
    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{args.matrix.stem}-ssm"
    run.instances, lookup = find_targets(args, cell)
    if not args.dry_run:
        run_id = create_run_dir(run, run_id, cell)
    try:
        script = prepare_script(cell, run_id)
    except ScriptError as error:
        why = f"the scenario does not load with this cell's values: {error}"
        if run.dir:
            finish_failed(run, f"{why}; nothing was sent")
        raise Stop(why) from None
    if run.dir:
        # What the instances run, kept with the run (the entry module only for a script of one's own).
        for path in [run.work / "k6-script.json", *run.work.glob("k6-entry.js*")]:
            if path.is_file():
                shutil.copy(path, run.dir / "cells" / cell.id)
    start_at = int(time.time()) + int(cell.settings.get("FANOUT_START_DELAY") or 0)
    if args.dry_run:
        plan_dir = Path(tempfile.mkdtemp(prefix="ssm-fanout-dry-run.", dir=os.environ.get("TMPDIR")))
        sys.stdout.write(write_plan(plan_dir, cell, script, run_id, run.instances, start_at, lookup))
        return
    send_run(run, cell, script, run_id, start_at)
    if args.no_wait:
        manifest.update(run.dir, status="sent")
        say(f"sent; collect the results with: scripts/ssm-fanout.sh --collect {shown(run.dir)}")
        run.finished = True
        return
    collect_run(run, run.dir)


def send_run(run: Run, cell: Cell, script: Script, run_id: str, start_at: int) -> None:
    """The commands, the bucket's check, one send per instance; what was sent goes into the manifest."""
    assert run.dir is not None
    files = build_commands(run.work, cell, script, run_id, run.instances, start_at)
    manifest.update(run.dir, fanout={"start_at_epoch": start_at, "scenario_files": files})
    for iid in run.instances:
        (run.dir / "cells" / cell.id / "instances" / iid).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run.work / f"command-{iid}.sh", run.dir / "cells" / cell.id / "instances" / iid / "command.sh")
    say(f"run {run_id}: cell {cell.id} on {len(run.instances)} instance(s), start at "
        f"{time.strftime('%H:%M:%SZ', time.gmtime(start_at))}; results in {shown(run.dir)}")
    manifest.update(run.dir, instances=read_json(run.work / "instances.json"))
    run_python(run, "send", str(run.dir / "manifest.json"), str(run.work),
               "--delivery-timeout", str(delivery_timeout(cell.settings)))
    if time.time() > start_at:
        warn(f"the sends took longer than FANOUT_START_DELAY={cell.settings.get('FANOUT_START_DELAY')}s: "
             "some instances start late (raise it)")
        manifest.add_warning(run.dir, "sends ended after the common start time; the segments did not all start together")
    manifest.update(run.dir, fanout={"deadline_epoch": int(time.time()) + run_timeout(cell.settings, script)})


def collect_run(run: Run, run_dir: Path) -> None:
    """Poll, fetch every output, write the rows, render the tables, report."""
    from . import fanoutrow, tables

    data = manifest.read(run_dir)
    if data.get("backend") != "ssm":
        usage_error(f"{run_dir} is not a fan-out run (backend is not ssm)")
    entries = data.get("instances") or []
    if not entries:
        raise Stop(f"{run_dir}: the manifest lists no instance")
    run.dir = run_dir.resolve()
    path = str(run.dir / "manifest.json")
    run_python(run, "poll", path)
    run_python(run, "collect", path, str(run.dir / "cells" / data["cell"]["id"]), "--root", str(ROOT))
    fanoutrow.write_rows(run.dir)
    errors = [" ".join(str(e["error"]).split("\n")) for e in manifest.read(run.dir)["instances"] if e.get("error")]
    manifest.update(run.dir, cells_done=1, cells_failed=1 if errors else 0)
    manifest.finish(run.dir, "failed" if errors else "complete")
    tables.main(["render", str(run.dir)])
    run.finished = True
    print("\n" + (run.dir / "results.md").read_text(encoding="utf-8"), end="")
    print(f"\nresults: {shown(run.dir)}", flush=True)
    if errors:
        for error in errors:
            say(f"  {error}")
        others = "; the row adds up the other instances only" if len(errors) < len(entries) else ""
        raise Stop(f"{len(errors)} of {len(entries)} instance(s) failed{others}; see {shown(run.dir)}")


def record_end(run: Run, status: int) -> None:
    """The run ended before it finished, with exit STATUS: every invocation sent that has not ended
    is cancelled and named in its instance's error, and the manifest is finished "interrupted" (a
    signal) or "failed" (an error)."""
    from .fanoutrun import end_run
    from .ssm import ssm_client

    assert run.dir is not None
    why = f"interrupted by {run.ended_by}" if run.ended_by else f"stopped by an error (exit status {status})"
    try:
        fanout = manifest.read(run.dir).get("fanout") or {}
        try:
            client = ssm_client(fanout.get("region") or "", fanout.get("profile") or "")
        except Exception:  # no client (a profile that is not there): every cancel fails, and is named
            client = None
        warning = end_run(client, run.dir / "manifest.json", why, warn=warn)
    except Exception:
        warning = f"the fan-out was {why}, and the cancel of what was sent could not run: check the instances"
    manifest.add_warning(run.dir, warning)
    manifest.finish(run.dir, "interrupted" if run.ended_by else "failed")
    say(f"the fan-out was {why}; {shown(run.dir)} records it")


def end_child(child: subprocess.Popen) -> None:
    """Stop the ltsuite.ssm child: SIGTERM, then SIGKILL after 30 s (what it sent or saw so far is
    in the manifest)."""
    child.terminate()
    try:
        child.wait(30)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def on_signal(signum: int, _frame: object) -> None:
    """A signal in ENDING ends the run (main records it)."""
    raise Ended(signum)


def main(argv: list[str] | None = None) -> int:
    for signum in ENDING:
        signal.signal(signum, on_signal)
    run = Run(work=Path(tempfile.mkdtemp(prefix="ssm-fanout.", dir=os.environ.get("TMPDIR"))))
    status = 0
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        if args.collect is not None:
            collect_run(run, args.collect)
        else:
            start(run, args)
    except Ended as ended:
        run.ended_by, status = str(ended), 128 + ended.signum
        say("")
    except Stop as stop:
        if str(stop):
            print(f"{prog()}: {stop}", file=sys.stderr, flush=True)
        status = stop.code
    except Exception:
        traceback.print_exc()
        status = 1
    # Whatever ended the run, nothing sent is left running unattended, and the manifest never
    # stays "running"; a second signal meanwhile does not cut this short.
    for signum in ENDING:
        signal.signal(signum, signal.SIG_IGN)
    if run.child is not None:
        end_child(run.child)
    if run.dir is not None and not run.finished:
        record_end(run, status)
    shutil.rmtree(run.work, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
