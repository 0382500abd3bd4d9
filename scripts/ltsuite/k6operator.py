"""scripts/k6-operator.sh: one matrix cell as a k6-operator TestRun (k6.io/v1alpha1) and its
ConfigMap, split over N pods, on stdout; or, with --collect, the row from the pods' logs. The cell,
its checks and its script are the plan the SSM fan-out sends too (ltsuite.fanoutplan, with its
options --cell and MATRIX); the documents and the collection are ltsuite.testrun's.

The manifest is made to be applied: its load goes where a run's would, so a target off loopback
needs ALLOW_REMOTE_TARGET=1 (no dry-run leniency).
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from . import testrun
from .fanoutplan import ROOT, Stop, common_parser, check_target, matrix_path, positive, prepare_script, prog, \
    resolve_cell, usage_error, ScriptError


def k8s_name(text: str) -> str:
    """TEXT as a Kubernetes object name (lower case, digits and -, starting and ending with an
    alphanumeric), at most 48 characters: k6-operator names runner i's Service NAME-service-i, and a
    name holds at most 63."""
    return re.sub(r"[^a-z0-9-]", "-", text.lower())[:48].rstrip("-")


def parse(argv: list[str]) -> Namespace:
    """The options (the shared ones, ltsuite.fanoutplan.common_parser, and the operator's)."""
    parser = common_parser("Print a k6-operator TestRun for one matrix cell.")
    parser.add_argument("--parallelism", type=positive("--parallelism needs a number of pods >= 1"))
    parser.add_argument("--run-id")
    parser.add_argument("--collect", type=Path)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--logs", type=Path)
    source.add_argument("--kubectl", action="store_true")
    args = parser.parse_args(argv)
    if args.run_id is not None and not re.fullmatch(r"[A-Za-z0-9._-]+", args.run_id):
        usage_error("--run-id needs an id of letters, digits and ._-")
    if args.collect is not None:
        if not args.collect.is_file():
            usage_error("--collect needs the TestRun file this script printed")
        if args.logs is None and not args.kubectl:
            usage_error("--collect needs --logs DIR or --kubectl")
        if args.logs is not None and not args.logs.is_dir():
            usage_error("--logs needs a directory of the pods' logs (one file a pod, named after it)")
        return args
    if args.parallelism is None:
        usage_error("--parallelism N is required (the number of k6 pods)")
    args.matrix = matrix_path(args.matrix)
    return args


def manifest(args: Namespace, work: Path) -> int:
    """The ConfigMap and the TestRun of the cell on stdout (ltsuite.testrun manifest)."""
    cell = resolve_cell(args.matrix, args.cell, work)
    check_target(cell, dry_run=False)
    run_id = args.run_id or f"{time.strftime('%Y%m%d-%H%M%S')}-{args.matrix.stem}-k8s"
    try:
        script = prepare_script(cell, run_id)
    except ScriptError as error:
        raise Stop(str(error)) from None
    settings = cell.settings
    return testrun.manifest_main(Namespace(
        work_dir=work, name=k8s_name(f"k6-{run_id}-{cell.id}"), namespace=settings.get("K8S_NAMESPACE", ""),
        parallelism=args.parallelism, run_id=run_id, cell=cell.id, k6_image=settings.get("K8S_K6_IMAGE", ""),
        runner_image=settings.get("K8S_RUNNER_IMAGE", ""), axis_keys=" ".join(cell.axes),
        influxdb_url=settings.get("FANOUT_INFLUXDB_URL", ""), own_script=script.own_script))


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        if args.collect is not None:
            return testrun.collect_main(Namespace(testrun=args.collect, logs=args.logs, kubectl=args.kubectl,
                                                  results_dir=Path(os.environ.get("LT_RESULTS_DIR") or ROOT / "results")))
        with tempfile.TemporaryDirectory(prefix="k6-operator.") as work:
            return manifest(args, Path(work))
    except Stop as stop:
        if str(stop):
            print(f"{prog()}: {stop}", file=sys.stderr)
        return stop.code


if __name__ == "__main__":
    sys.exit(main())
