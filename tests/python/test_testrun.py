"""ltsuite.testrun: the k6-operator TestRun of a cell, checked against k6-operator's own CRD schema
(tests/python/fixtures/k6-operator/testrun-schema.json), and the collection's errors. The pods'
logs of a real run are collected in tests/integration/k6-operator.bats."""
import json
import re
from pathlib import Path

import pytest
import yaml

from ltsuite import fanout, ssm, testrun

FIXTURE = Path(__file__).parent / "fixtures" / "k6-operator" / "testrun-schema.json"
ROOT = Path(__file__).resolve().parents[2]


def strict_errors(value, schema, path="$"):
    """Where VALUE breaks an openAPIV3Schema of a CRD as the API server checks it with kubectl's
    default --validate=strict: a field the schema does not name, a wrong type, a missing required
    field."""
    errors = []
    if schema.get("x-kubernetes-int-or-string"):
        return [] if isinstance(value, (int, str)) and not isinstance(value, bool) else [f"{path}: not int or string"]
    kind = schema.get("type")
    checks = {"object": dict, "array": list, "string": str, "boolean": bool}
    if kind == "integer" and (not isinstance(value, int) or isinstance(value, bool)):
        return [f"{path}: not an integer"]
    if kind in checks and not isinstance(value, checks[kind]):
        return [f"{path}: not {kind}"]
    if kind == "object":
        props = schema.get("properties")
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}.{key}: required")
        for key, item in value.items():
            if props is not None and key in props:
                errors += strict_errors(item, props[key], f"{path}.{key}")
            elif isinstance(schema.get("additionalProperties"), dict):
                errors += strict_errors(item, schema["additionalProperties"], f"{path}.{key}")
            elif props is not None and not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f"{path}.{key}: unknown field")
    if kind == "array":
        for i, item in enumerate(value):
            errors += strict_errors(item, schema.get("items", {}), f"{path}[{i}]")
    return errors


def schema():
    return json.loads(FIXTURE.read_text(encoding="utf-8"))["schema"]


def plan(**changes):
    values = dict(name="k6-r42-01", namespace="loadtest", parallelism=3, run_id="r42", cell="01",
                  cell_env="SCENARIO=spike\nVUS=6\nTARGET_URL=http://target:8080\nRUN_ID=old\n",
                  k6_args=["--tag", "run_id=r42", "--tag", "cell=01"], k6_image="grafana/k6:2.2.0",
                  runner_image="python:3.12-slim", axes={"VUS": "6"})
    values.update(changes)
    return testrun.Plan(**values)


def made(tmp_path, **changes):
    """The two documents as kubectl reads them: the YAML printed, parsed back."""
    text = testrun.manifest_text(plan(**changes), b"archive bytes", testrun.configmap_files(tmp_path))
    return text, [doc for doc in yaml.safe_load_all(text) if doc]


def test_the_testrun_has_only_fields_of_k6_operators_crd_with_their_types(tmp_path):
    _, (configmap, run) = made(tmp_path)
    assert run["apiVersion"] == "k6.io/v1alpha1" and run["kind"] == "TestRun"
    assert strict_errors(run, schema()) == []
    assert run["spec"]["parallelism"] == 3
    assert run["spec"]["script"] == {"configMap": {"name": "k6-r42-01", "file": "archive.tar"}}


def test_the_strict_check_finds_a_misspelled_field_a_wrong_type_and_a_missing_one(tmp_path):
    _, (_, run) = made(tmp_path)
    run["spec"]["runner"]["volumeMount"] = run["spec"]["runner"].pop("volumeMounts")
    run["spec"]["parallelism"] = "3"
    del run["spec"]["script"]
    assert sorted(strict_errors(run, schema())) == ["$.spec.parallelism: not an integer",
                                                    "$.spec.runner.volumeMount: unknown field",
                                                    "$.spec.script: required"]


def test_the_yaml_printed_reads_back_as_the_documents_built(tmp_path):
    text, docs = made(tmp_path)
    files = testrun.configmap_files(tmp_path)
    assert docs == testrun.documents(plan(), b"archive bytes", files)
    assert text.startswith("# k6-operator TestRun: run r42, cell 01, 3 pod(s)")


def test_the_configmap_holds_the_archive_the_instance_side_script_and_the_histogram_modules(tmp_path):
    _, (configmap, run) = made(tmp_path)
    assert configmap["kind"] == "ConfigMap" and configmap["metadata"]["name"] == run["metadata"]["name"]
    keys = set(configmap["data"]) | set(configmap["binaryData"])
    assert all(re.fullmatch(r"[-._a-zA-Z0-9]+", key) for key in keys)
    assert len(json.dumps(configmap)) < 1024 * 1024  # a ConfigMap holds at most 1 MiB
    # The very script an SSM instance runs, and the pods' k6.
    assert configmap["data"]["ssm-instance.sh"] == (ROOT / "scripts/ssm-instance.sh").read_text(encoding="utf-8")
    assert configmap["data"]["k6"] == (ROOT / "scripts/k6-pod.sh").read_text(encoding="utf-8")
    assert set(ssm.INSTANCE_MODULES) <= set(configmap["data"])
    # Every item the runner mounts is a key of the ConfigMap, k6 among them on the PATH.
    volume = run["spec"]["runner"]["volumes"][0]["configMap"]
    assert volume["name"] == configmap["metadata"]["name"] and volume["defaultMode"] == 0o755
    assert {item["key"] for item in volume["items"]} <= keys
    env = {e["name"]: e.get("value") for e in run["spec"]["runner"]["env"]}
    assert env["PATH"].split(":")[0] == "/ltsuite/bin"
    assert {"path": "bin/k6", "key": "k6"} in volume["items"]
    assert env["LT_SUMMARY_BEGIN"] == ssm.SUMMARY_BEGIN and env["LT_HISTOGRAM_END"] == ssm.HISTOGRAM_END


def test_the_runner_env_is_the_cells_knobs_with_the_runs_identity(tmp_path):
    _, (_, run) = made(tmp_path)
    env = {e["name"]: e.get("value") for e in run["spec"]["runner"]["env"]}
    assert env["VUS"] == "6" and env["TARGET_URL"] == "http://target:8080"
    assert env["RUN_ID"] == "r42" and env["CELL_ID"] == "01"
    pod_name = [e for e in run["spec"]["runner"]["env"] if e["name"] == "LT_POD_NAME"]
    assert pod_name == [{"name": "LT_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]


def test_the_plan_names_each_pod_with_k6_operators_segment(tmp_path):
    _, (configmap, _) = made(tmp_path)
    pods = json.loads(configmap["data"]["plan.json"])["pods"]
    # k6-operator: runner job i (1..N) of NAME is NAME-i, segment (i-1)/N:i/N (pkg/segmentation).
    assert pods == [{"pod": "k6-r42-01-1", "segment": "0:1/3"}, {"pod": "k6-r42-01-2", "segment": "1/3:2/3"},
                    {"pod": "k6-r42-01-3", "segment": "2/3:1"}]
    assert fanout.segment(0, 1) == "0:1"


def test_a_word_with_a_space_is_refused_by_name_unless_a_tag_of_ones_own_script():
    words = ["--tag", "team=load test", "--tag", "cell=01"]
    assert testrun.arguments(words, own_script=True) == "--tag cell=01"
    with pytest.raises(testrun.PlanError, match="'team=load test' has a space"):
        testrun.arguments(words, own_script=False)


def test_influxdb_goes_into_the_arguments_when_set(tmp_path):
    _, (_, run) = made(tmp_path, influxdb_url="http://influx:8086/k6")
    assert run["spec"]["arguments"].endswith("--out influxdb=http://influx:8086/k6")


def write_manifest(tmp_path, **changes):
    path = tmp_path / "testrun.yaml"
    path.write_text(made(tmp_path, **changes)[0], encoding="utf-8")
    return path


def test_collect_names_a_pod_without_a_log_and_one_without_a_summary(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "k6-r42-01-1.log").write_text("k6 crashed\nk6-fanout exit status: 107\n", encoding="utf-8")
    (logs / "k6-r42-01-2.log").write_text(f"{ssm.SUMMARY_BEGIN}\n{{\"metrics\": {{}}}}\n{ssm.SUMMARY_END}\n"
                                          "k6-fanout exit status: 1\n", encoding="utf-8")
    run_dir, pods = testrun.collect(write_manifest(tmp_path), logs, tmp_path / "results")
    errors = [pod.error for pod in pods]
    assert errors[0].startswith("pod k6-r42-01-1: its log has no k6 summary (k6 exit status 107)")
    assert errors[1].startswith("pod k6-r42-01-2: k6 exit status 1")
    assert errors[2].startswith("pod k6-r42-01-3: no log")
    row = json.loads((run_dir / "cells/01/row.json").read_text(encoding="utf-8"))
    assert row["status"] == "failed" and row["backend"] == "k6-operator" and row["instances"] == 0
    assert row["lat_p95_ms"] is None
    assert json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["status"] == "failed"


def test_collect_refuses_a_log_of_no_pod_of_the_testrun(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "k6-other-1.log").write_text("", encoding="utf-8")
    with pytest.raises(testrun.PlanError, match="log file.s. of no pod of this TestRun: k6-other-1"):
        testrun.collect(write_manifest(tmp_path), logs, tmp_path / "results")


def test_collect_asks_kubectl_for_each_runner_jobs_log_in_the_testruns_namespace(tmp_path, monkeypatch):
    # A stand-in kubectl: its arguments recorded, the log of job/NAME-2 only (the others fail).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "kubectl").write_text(f"#!/bin/sh\necho \"$*\" >>{calls}\n"
                                     '[ "$4" = job/k6-r42-01-2 ] || exit 1\necho "k6-fanout exit status: 0"\n')
    (bin_dir / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    logs = testrun.read_logs(json.loads(made(tmp_path)[1][0]["data"]["plan.json"]), None)
    assert calls.read_text().splitlines() == [f"logs -n loadtest job/k6-r42-01-{i}" for i in (1, 2, 3)]
    assert logs == {"k6-r42-01-1": None, "k6-r42-01-2": "k6-fanout exit status: 0\n", "k6-r42-01-3": None}


def test_collect_without_kubectl_or_logs_says_what_to_give(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(testrun.PlanError, match="kubectl not found: give the saved logs with --logs DIR"):
        testrun.read_logs(json.loads(made(tmp_path)[1][0]["data"]["plan.json"]), None)
