"""One fan-out cell as a k6-operator TestRun (scripts/k6-operator.sh), and its pods' logs collected into
the cell's row with the SSM fan-out's own code.

  python3 -m ltsuite.testrun manifest WORK_DIR --name NAME --namespace NS --parallelism N --run-id ID
                             --cell CELL --k6-image IMAGE --runner-image IMAGE [--axis-keys "KEY ..."]
                             [--influxdb-url URL] [--own-script]
  python3 -m ltsuite.testrun collect TESTRUN_YAML (--logs DIR | --kubectl) [--results-dir DIR]

manifest reads WORK_DIR/cell.env (the cell's settings, auto knobs resolved: ltsuite.cell resolve),
WORK_DIR/script.tar (k6 archive of the scenario) and WORK_DIR/k6-args.txt (the script's k6 arguments,
one word a line: k6_script_args) and prints two YAML documents:

- a ConfigMap holding the archive (binaryData archive.tar), the instance-side script an SSM instance
  runs (scripts/ssm-instance.sh), the `k6` the runner pods find first on their PATH
  (scripts/k6-pod.sh), the modules that reduce k6's samples to a latency histogram (ltsuite.histogram,
  ltsuite.latency, as ltsuite.ssm ships them) and plan.json (what collect needs);
- a TestRun (k6.io/v1alpha1; fields of k6-operator's api/v1alpha1/testrun_types.go) whose
  script.configMap names the archive, with `parallelism` pods. k6-operator gives runner pod i (1..N)
  the execution segment (i-1)/N:i/N of the sequence 0,1/N,...,1 (its pkg/segmentation), the same
  segments as the SSM fan-out's instances (ltsuite.fanout.segment). Its runner command is `k6 run ... --paused`;
  runner.env puts /ltsuite/bin (the ConfigMap mounted with runner.volumes) first on PATH, so that `k6`
  is k6-pod.sh, which runs ssm-instance.sh: the pod writes every request's samples, reduces them to
  its histogram and prints its summary and histogram between the fan-out's markers to its log. k6
  itself comes from the k6 image (an init container copies /usr/bin/k6 into an emptyDir), the runner
  image (K8S_RUNNER_IMAGE) brings python3 and a POSIX sh.

k6-operator splits `arguments` at spaces (one string), so no word may hold one: a tag of a script of
one's own with a space in its value is left out (its entry module gives the script's own tags to
every VU itself); any other such word is refused by name.

collect reads the TestRun file that was applied, takes each runner pod's log (the files of DIR, one
a pod, named after it; or `kubectl logs job/NAME-i` for i in 1..N) and writes results/<run-id>/ as
the SSM fan-out does: each pod's stdout.txt, summary.json, histogram.json and row.json under
cells/<cell>/instances/<pod>/, the cell's row.json (ltsuite.fanout: counters added up, percentiles
from the merged histograms) and results.csv/.md. A pod fails (its error names it) when its log is
missing, holds no summary, or says k6 ended with a status other than 0 or 99.
"""
from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import columns, fanout, formats, ssm, tables
from .cellfiles import env_text

PROG = "ltsuite.testrun"
ROOT = Path(__file__).resolve().parents[2]
#: Where the pods find the suite's files (the ConfigMap) and k6 itself (an emptyDir).
MOUNT, K6_DIR = "/ltsuite", "/ltsuite-k6"
#: The ConfigMap keys and where the runner pods see them below MOUNT (mode 0755: k6 is run).
FILES = {"k6": "bin/k6", "ssm-instance.sh": "ssm-instance.sh",
         "histogram.py": "ltsuite/histogram.py", "latency.py": "ltsuite/latency.py"}
POD_PATH = f"{MOUNT}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class PlanError(ValueError):
    """A cell that cannot become a TestRun; the message says why."""


@dataclass
class Plan:
    """What the TestRun of one cell is made of (the module's doc)."""

    name: str
    namespace: str
    parallelism: int
    run_id: str
    cell: str
    cell_env: str
    k6_args: list[str]
    k6_image: str
    runner_image: str
    axes: dict[str, Any] = field(default_factory=dict)
    influxdb_url: str = ""
    own_script: bool = False

    def to_json(self) -> dict[str, Any]:
        """plan.json: what collect needs, and the segments each pod runs."""
        return {"run_id": self.run_id, "cell": self.cell, "name": self.name, "namespace": self.namespace,
                "parallelism": self.parallelism, "axes": self.axes, "cell_env": self.cell_env,
                "pods": [{"pod": f"{self.name}-{i}", "segment": fanout.segment(i - 1, self.parallelism)}
                         for i in range(1, self.parallelism + 1)]}


def arguments(words: list[str], own_script: bool) -> str:
    """TestRun.spec.arguments: the words joined by spaces (the module's doc for the rule on spaces)."""
    kept: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word == "--tag" and i + 1 < len(words) and any(c.isspace() for c in words[i + 1]) and own_script:
            skip = True
            continue
        if any(c.isspace() for c in word):
            raise PlanError(f"k6 argument '{word}' has a space in it; k6-operator splits its arguments at "
                            "spaces, so it cannot pass it (a tag of the script's own options.tags can have "
                            "one only in a script of one's own)")
        kept.append(word)
    return " ".join(kept)


def env_lines(text: str) -> list[tuple[str, str]]:
    """KEY=VALUE lines as (key, value), in order, the last of a key winning."""
    return list(env_text(text).items())


def runner_env(plan: Plan) -> list[dict[str, Any]]:
    """runner.env: the cell's knobs and the run's identity (as k6's environment), then the settings of
    k6-pod.sh and ssm-instance.sh."""
    knobs = [(k, v) for k, v in env_lines(plan.cell_env) if k not in ("RUN_ID", "CELL_ID")]
    knobs += [("RUN_ID", plan.run_id), ("CELL_ID", plan.cell)]
    own = [("PATH", POD_PATH), ("LT_K6", f"{K6_DIR}/k6"), ("LT_BUNDLE_DIR", MOUNT),
           ("LT_WORKDIR", "/tmp/k6-fanout"), ("LT_CELL_ENV", plan.cell_env.rstrip("\n")),
           ("LT_SUMMARY_BEGIN", ssm.SUMMARY_BEGIN), ("LT_SUMMARY_END", ssm.SUMMARY_END),
           ("LT_HISTOGRAM_BEGIN", ssm.HISTOGRAM_BEGIN), ("LT_HISTOGRAM_END", ssm.HISTOGRAM_END),
           ("LT_KEEP_SAMPLES", "0"), ("LT_TRENDS", ",".join(columns.trend_metrics()))]
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in knobs + own]
    env.append({"name": "LT_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})
    return env


def configmap_files(work_dir: Path) -> dict[str, str]:
    """The text files of the ConfigMap (FILES' keys): the scripts as they are in the repo and the
    histogram modules as ltsuite.ssm ships them to an instance."""
    modules = work_dir / "instance-modules"
    ssm.write_instance_modules(modules)
    return {"k6": (ROOT / "scripts/k6-pod.sh").read_text(encoding="utf-8"),
            "ssm-instance.sh": (ROOT / "scripts/ssm-instance.sh").read_text(encoding="utf-8"),
            **{name: (modules / "ltsuite" / name).read_text(encoding="utf-8") for name in ssm.INSTANCE_MODULES}}


def documents(plan: Plan, archive: bytes, files: dict[str, str]) -> list[dict[str, Any]]:
    """The ConfigMap and the TestRun (the module's doc)."""
    words = list(plan.k6_args)
    if plan.influxdb_url:
        words += ["--out", f"influxdb={plan.influxdb_url}"]
    labels = {"app.kubernetes.io/part-of": "loadtest-suite"}
    configmap = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": plan.name, "namespace": plan.namespace, "labels": labels},
        "data": {**files, "plan.json": json.dumps(plan.to_json(), indent=2) + "\n"},
        "binaryData": {"archive.tar": base64.b64encode(archive).decode("ascii")},
    }
    testrun = {
        "apiVersion": "k6.io/v1alpha1", "kind": "TestRun",
        "metadata": {"name": plan.name, "namespace": plan.namespace, "labels": labels},
        "spec": {
            "parallelism": plan.parallelism,
            "script": {"configMap": {"name": plan.name, "file": "archive.tar"}},
            "arguments": arguments(words, plan.own_script),
            "runner": {
                "image": plan.runner_image,
                "env": runner_env(plan),
                "initContainers": [{"name": "k6", "image": plan.k6_image,
                                    "command": ["cp", "/usr/bin/k6", f"{K6_DIR}/k6"],
                                    "volumeMounts": [{"name": "ltsuite-k6", "mountPath": K6_DIR}]}],
                "volumes": [{"name": "ltsuite", "configMap": {
                                "name": plan.name, "defaultMode": 0o755,
                                "items": [{"key": key, "path": path} for key, path in FILES.items()]}},
                            {"name": "ltsuite-k6", "emptyDir": {}}],
                "volumeMounts": [{"name": "ltsuite", "mountPath": MOUNT, "readOnly": True},
                                 {"name": "ltsuite-k6", "mountPath": K6_DIR}],
            },
        },
    }
    return [configmap, testrun]


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(str(value), ensure_ascii=False)


def to_yaml(value: Any, indent: int = 0) -> str:
    """VALUE as block YAML, every scalar written as JSON (which YAML reads as is)."""
    pad = " " * indent
    if isinstance(value, dict) and value:
        out = ""
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                out += f"{pad}{key}:\n" + to_yaml(item, indent + 2)
            else:
                out += f"{pad}{key}: {to_yaml(item).strip()}\n"
        return out
    if isinstance(value, list) and value:
        out = ""
        for item in value:
            if isinstance(item, dict) and item:
                # "- " takes the place of the first key's indent; the other keys keep theirs.
                out += f"{pad}- " + to_yaml(item, indent + 2)[indent + 2:]
            else:
                out += f"{pad}- {json.dumps(item) if isinstance(item, list) else to_yaml(item).strip()}\n"
        return out
    if isinstance(value, (dict, list)):
        return json.dumps(value) + "\n"
    return _scalar(value) + "\n"


def manifest_text(plan: Plan, archive: bytes, files: dict[str, str]) -> str:
    """The two documents as one YAML stream, with a comment saying what they are."""
    head = (f"# k6-operator TestRun: run {plan.run_id}, cell {plan.cell}, {plan.parallelism} pod(s) splitting the "
            "load with execution segments.\n# Apply with: kubectl apply -f FILE (needs k6-operator installed in "
            "the cluster).\n# Collect with: scripts/k6-operator.sh --collect FILE (--logs DIR | --kubectl)\n")
    return head + "---\n".join(to_yaml(doc) for doc in documents(plan, archive, files))


# --- collect ---------------------------------------------------------------------------------------


@dataclass
class Pod:
    """One runner pod's log and what it says."""

    name: str
    segment: str
    error: str = ""


def load_plan(testrun_file: Path) -> dict[str, Any]:
    """plan.json of the ConfigMap in the TestRun file that was applied."""
    import yaml  # PyYAML: in .tools/venv (make aws-tools) and most distributions' python3

    try:
        docs = [d for d in yaml.safe_load_all(testrun_file.read_text(encoding="utf-8")) if isinstance(d, dict)]
    except (OSError, yaml.YAMLError) as error:
        raise PlanError(f"{testrun_file}: cannot read the TestRun file: {error}") from error
    for doc in docs:
        if doc.get("kind") == "ConfigMap" and "plan.json" in (doc.get("data") or {}):
            return json.loads(doc["data"]["plan.json"])
    raise PlanError(f"{testrun_file}: no ConfigMap with plan.json (not made by scripts/k6-operator.sh)")


def read_logs(plan: dict[str, Any], logs_dir: Path | None) -> dict[str, str | None]:
    """Each pod's log by pod name (None: none found): from LOGS_DIR (a file a pod, named after it,
    any extension), else with `kubectl logs job/POD` (k6-operator names runner i's job NAME-i)."""
    pods = [p["pod"] for p in plan["pods"]]
    if logs_dir is not None:
        files = {path.name.split(".")[0]: path for path in sorted(logs_dir.iterdir()) if path.is_file()}
        unknown = sorted(set(files) - set(pods))
        if unknown:
            raise PlanError(f"{logs_dir}: log file(s) of no pod of this TestRun: {', '.join(unknown)} "
                            f"(expected {pods[0]}.log ... {pods[-1]}.log)")
        return {pod: files[pod].read_text(encoding="utf-8", errors="replace") if pod in files else None
                for pod in pods}
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise PlanError("kubectl not found: give the saved logs with --logs DIR")
    out: dict[str, str | None] = {}
    for pod in pods:
        done = subprocess.run([kubectl, "logs", "-n", plan["namespace"], f"job/{pod}"],
                              capture_output=True, text=True, check=False, timeout=120)
        out[pod] = done.stdout if done.returncode == 0 else None
    return out


def collect_pod(pod: Pod, log: str | None, out_dir: Path, cell_env: Path, plan: dict[str, Any]) -> None:
    """One pod's files and row under OUT_DIR, or its error (the module's doc)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if log is None:
        pod.error = f"pod {pod.name}: no log (kubectl logs job/{pod.name}, or {pod.name}.log in the logs directory)"
        return
    (out_dir / "stdout.txt").write_text(log, encoding="utf-8")
    summary, hist, status = ssm.extract_summary(log), ssm.extract_histogram(log), ssm.k6_exit_status(log)
    if summary is not None:
        fanout.write_json(out_dir / "summary.json", summary)
    if hist is not None:
        fanout.write_json(out_dir / "histogram.json", hist)
    shown = f"cells/{plan['cell']}/instances/{pod.name}/stdout.txt"
    if summary is None:
        pod.error = (f"pod {pod.name}: its log has no k6 summary"
                     f"{f' (k6 exit status {status})' if status else ''}; see {shown}")
    elif status not in ("0", "99"):
        pod.error = f"pod {pod.name}: k6 exit status {status or 'not printed'}; see {shown}"
    else:
        shutil.copyfile(cell_env, out_dir / "cell.env")
        fanout.write_instance_row(out_dir, run_id=plan["run_id"], cell=plan["cell"], axes=plan.get("axes") or {})


def collect(testrun_file: Path, logs_dir: Path | None, results_dir: Path) -> tuple[Path, list[Pod]]:
    """results_dir/<run-id>/ from the pods' logs (the module's doc); the run directory and the pods."""
    plan = load_plan(testrun_file)
    logs = read_logs(plan, logs_dir)
    run_dir = results_dir / plan["run_id"]
    cell_dir = run_dir / "cells" / plan["cell"]
    cell_dir.mkdir(parents=True, exist_ok=True)
    (cell_dir / "cell.env").write_text(plan["cell_env"], encoding="utf-8")
    pods = [Pod(p["pod"], p["segment"]) for p in plan["pods"]]
    for pod in pods:
        collect_pod(pod, logs[pod.name], cell_dir / "instances" / pod.name, cell_dir / "cell.env", plan)
    errors = [pod.error for pod in pods if pod.error]
    status = "failed" if errors else "ok"
    percentiles, notes = fanout.merged_percentiles(cell_dir)
    row = fanout.aggregate_row(fanout.instance_rows(cell_dir), run_id=plan["run_id"], cell=plan["cell"],
                               axes=plan.get("axes") or {}, env=dict(env_lines(plan["cell_env"])), status=status,
                               error="; ".join(errors), percentiles=percentiles, notes=notes, backend="k6-operator")
    fanout.write_json(cell_dir / "row.json", row)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    fanout.write_json(run_dir / "manifest.json", formats.stamp({
        "run_id": plan["run_id"], "backend": "k6-operator", "status": "failed" if errors else "complete",
        "collected_at": now, "axes": list((plan.get("axes") or {}).keys()), "cells_total": 1, "cells_done": 1,
        "cells_failed": 1 if errors else 0, "cell": {"id": plan["cell"]},
        "testrun": {"name": plan["name"], "namespace": plan["namespace"], "parallelism": plan["parallelism"]},
        "instances": [{"instance_id": p.name, "segment": p.segment, "error": p.error} for p in pods],
        "notes": row.get("notes") or "", "warnings": []}))
    tables.render(run_dir)
    return run_dir, pods


def manifest_main(args: argparse.Namespace) -> int:
    """manifest (the module's doc): the YAML on stdout; a cell that cannot be one is exit 2."""
    work: Path = args.work_dir
    plan = Plan(name=args.name, namespace=args.namespace, parallelism=args.parallelism, run_id=args.run_id,
                cell=args.cell, cell_env=(work / "cell.env").read_text(encoding="utf-8"),
                k6_args=(work / "k6-args.txt").read_text(encoding="utf-8").splitlines(),
                k6_image=args.k6_image, runner_image=args.runner_image, axes={},
                influxdb_url=args.influxdb_url, own_script=args.own_script)
    values = dict(env_lines(plan.cell_env))
    plan.axes = {key: values.get(key) for key in args.axis_keys.split()}
    try:
        text = manifest_text(plan, (work / "script.tar").read_bytes(), configmap_files(work))
    except PlanError as error:
        print(f"k6-operator: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


def collect_main(args: argparse.Namespace) -> int:
    """collect (the module's doc): 0 when every pod brought back its summary, else 1, naming each."""
    try:
        run_dir, pods = collect(args.testrun, args.logs, args.results_dir)
    except PlanError as error:
        print(f"k6-operator: {error}", file=sys.stderr)
        return 2
    print((run_dir / "results.md").read_text(encoding="utf-8"))
    print(f"results: {run_dir}")
    failed = [pod for pod in pods if pod.error]
    for pod in failed:
        print(f"k6-operator: {pod.error}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python3 -m {PROG}", description="A cell as a k6-operator TestRun.")
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("manifest", help="print the ConfigMap and the TestRun")
    make.add_argument("work_dir", type=Path)
    for name in ("name", "namespace", "run-id", "cell", "k6-image", "runner-image"):
        make.add_argument(f"--{name}", required=True)
    make.add_argument("--parallelism", type=int, required=True)
    make.add_argument("--axis-keys", default="", help="the matrix's axes, the row's axes from the cell's values")
    make.add_argument("--influxdb-url", default="")
    make.add_argument("--own-script", action="store_true")
    take = sub.add_parser("collect", help="the pods' logs into results/<run-id>/")
    take.add_argument("testrun", type=Path)
    source = take.add_mutually_exclusive_group(required=True)
    source.add_argument("--logs", type=Path, help="a directory of saved logs, one file a pod, named after it")
    source.add_argument("--kubectl", action="store_true", help="kubectl logs job/NAME-i for each pod")
    take.add_argument("--results-dir", type=Path, default=ROOT / "results")
    args = parser.parse_args(argv)
    return manifest_main(args) if args.command == "manifest" else collect_main(args)


if __name__ == "__main__":
    sys.exit(main())
