"""The fan-out's AWS calls (ltsuite.awscalls, ltsuite.fanoutrun): the dry run's plan is the calls
the real run makes, recorded from boto3 itself against moto's AWS in process; the tag filter; the
operator's profile; the end of a run that stopped midway (botocore's Stubber, for a cancel that
works, which moto's SSM lacks)."""
import copy
import json

import boto3
import botocore
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from argparse import Namespace
from pathlib import Path

from ltsuite import awscalls, fanoutrun, ssm
from ltsuite.fanoutplan import Cell, Stop
from ltsuite.awscalls import Clients, UsageError


BUCKET = "lt-out"
PREFIX = "k6-fanout/r1/01"


@pytest.fixture(autouse=True)
def offline_aws(monkeypatch):
    """moto's in-process mock answers AWS's own endpoints; the machine's AWS settings stay out."""
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")


def test_the_tag_filter_becomes_a_filter_on_running_instances():
    call = awscalls.describe_call("Role=k6 generator*")
    assert (call.service, call.operation) == ("ec2", "describe_instances")
    assert call.params == {"Filters": [{"Name": "tag:Role", "Values": ["k6 generator*"]},
                                       {"Name": "instance-state-name", "Values": ["running"]}]}


@pytest.mark.parametrize("bad", ["k6", "=k6-*", "Name="])
def test_a_tag_filter_without_key_and_pattern_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="is not KEY=PATTERN"):
        awscalls.describe_call(bad)
    # The fan-out's lookup stops with a usage error (exit 2) before any AWS call.
    cell = Cell(matrix=Path("m.matrix"), number=1, of=1, id="01", work=Path("."), env={},
                settings={"FANOUT_TAG_FILTER": bad})
    with pytest.raises(Stop) as stop:
        fanoutrun.find_targets(Namespace(instances=[], dry_run=False), cell)
    assert (stop.value.code, str(stop.value)) == (2, f"FANOUT_TAG_FILTER: '{bad}' is not KEY=PATTERN (e.g. Name=k6-*)")


def test_the_operators_calls_use_the_profile_given():
    # No such profile in the (empty) configuration: boto3 refuses it, so it is the one used.
    with pytest.raises(botocore.exceptions.ProfileNotFound, match="ops-admin"):
        Clients("eu-west-1", "ops-admin").client("s3")
    assert Clients("eu-west-1").client("s3").meta.region_name == "eu-west-1"


def test_a_call_line_names_service_operation_and_parameters_and_a_file_parameter_by_its_path(tmp_path):
    (tmp_path / "p.json").write_text('{"commands": ["echo hi"]}')
    call = awscalls.send_call("i-a", str(tmp_path / "p.json"), "b", "k/r", 45, "c" * 150)
    assert call.line() == ('ssm.send_command(DocumentName="AWS-RunShellScript", InstanceIds=["i-a"], '
                           f'OutputS3BucketName="b", OutputS3KeyPrefix="k/r", TimeoutSeconds=45, Comment="{"c" * 100}", '
                           f'Parameters=<json file {tmp_path / "p.json"}>)')
    assert call.kwargs()["Parameters"] == {"commands": ["echo hi"]}


# --- The dry run's calls are the real run's ---------------------------------------------------

def record(clients, calls):
    """Record every API call CLIENTS' boto3 clients make, as (service, operation, parameters)."""
    def hook(params, model, **_):
        kept = {k: v if k == "Body" else copy.deepcopy(v) for k, v in params.items()}  # a file's Body is a stream
        calls.append((model.service_model.service_name, botocore.xform_name(model.name), kept))
    for service in ("ec2", "s3", "ssm"):
        clients.client(service).meta.events.register(f"provide-client-params.{service}", hook)


def made(calls, operation):
    return [params for _, op, params in calls if op == operation]


def manifest_of(tmp_path, instances):
    """A manifest as ssm-fanout.sh writes it before the sends (write_manifest, record_commands,
    record_instances), the scenario files through S3; the commands' files beside it."""
    data = {"run_id": "r1", "cell": {"id": "01", "number": 1}, "status": "running",
            "fanout": {"region": "us-east-1", "profile": "", "tag_filter": "Name=k6-*", "s3_bucket": BUCKET,
                       "s3_key_prefix": PREFIX, "poll_interval_s": 1, "start_at_epoch": 1700000000,
                       "scenario_files": "s3", "deadline_epoch": 4000000000, "influxdb_url": ""},
            "instances": [{"instance_id": i, "segment": fanoutrun_segment(n, len(instances)), "command_id": "",
                           "status": "", "status_details": "", "error": ""} for n, i in enumerate(instances)]}
    for i in instances:
        (tmp_path / f"params-{i}.json").write_text(json.dumps({"commands": [f"echo {i}"], "executionTimeout": ["60"]}))
        (tmp_path / f"command-{i}.sh").write_text(f"echo {i}\n")
    (tmp_path / ssm.BUNDLE).write_bytes(b"bundle")
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    return data


def fanoutrun_segment(index, count):
    from ltsuite.fanout import segment

    return segment(index, count)


def with_id(kwargs, command_id):
    return json.loads(json.dumps(kwargs).replace("<command-id>", command_id))


def test_the_dry_runs_calls_are_the_calls_the_real_run_makes(tmp_path):
    with mock_aws():
        setup = boto3.session.Session(region_name="us-east-1")
        ec2 = setup.client("ec2")
        ami = ec2.describe_images()["Images"][0]["ImageId"]
        for name, count in (("k6-a", 2), ("web", 1)):
            ec2.run_instances(ImageId=ami, MinCount=count, MaxCount=count, TagSpecifications=[
                {"ResourceType": "instance", "Tags": [{"Key": "Name", "Value": name}]}])
        setup.client("s3").create_bucket(Bucket=BUCKET)

        clients, calls = Clients("us-east-1"), []
        record(clients, calls)
        instances = fanoutrun.find_instances(clients, "Name=k6-*")
        assert len(instances) == 2
        data = manifest_of(tmp_path, instances)
        plan = fanoutrun.planned_calls(data, tmp_path, 45)
        manifest = tmp_path / "manifest.json"
        assert ssm.prepare_storage(clients, manifest, tmp_path) == ""
        ssm.send(clients.client("ssm"), manifest, tmp_path, 45)
        sent = json.loads(manifest.read_text())
        first = sent["instances"][0]["command_id"]
        assert first
        # Outputs where SSM puts them, so collect fetches them.
        for entry in sent["instances"]:
            setup.client("s3").put_object(Bucket=BUCKET, Key=f"{PREFIX}/{entry['command_id']}/{entry['instance_id']}/"
                                                            f"{fanoutrun.STDOUT_KEY}", Body=b"no summary\n")
        stopped = tmp_path / "stopped.json"
        stopped.write_text(manifest.read_text())
        fanoutrun.end_run(clients.client("ssm"), stopped, "interrupted by SIGINT")
        ssm.poll_manifest(manifest, clients.client("ssm"), sleep=lambda s: None)
        ssm.collect_manifest(manifest, tmp_path / "cell", tmp_path, clients.client("s3"))

    assert made(calls, "describe_instances") == [plan["lookup"][0].kwargs()]
    assert made(calls, "head_bucket") == [plan["storage"][0].kwargs()]
    upload = plan["storage"][1].kwargs()
    assert [(p["Bucket"], p["Key"]) for p in made(calls, "put_object")] == [(upload["Bucket"], upload["Key"])]
    assert made(calls, "send_command") == [call.kwargs() for call in plan["send"]]
    assert made(calls, "get_command_invocation")[0] == with_id(plan["poll"][0].kwargs(), first)
    assert made(calls, "cancel_command")[0] == with_id(plan["cancel"][0].kwargs(), first)
    assert made(calls, "list_objects_v2")[0] == with_id(plan["fetch"][0].kwargs(), first)
    assert made(calls, "get_object")[0] == with_id(plan["fetch"][1].kwargs(), first)
    # And the dry run's report prints every one of them.
    text = fanoutrun.plan_text(data, tmp_path, lookup="skipped", delivery_timeout=45, run_timeout=200, cells_total=1)
    for step in plan.values():
        for call in step:
            assert call.line() in text.splitlines()
    assert "# 2b. The commands are too large inline: ship the scenario files through S3:" in text


# --- The end of a run that stopped midway -----------------------------------------------------

CMD = "11111111-2222-3333-4444-555555555555"


def stopped_manifest(tmp_path, entries):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"run_id": "r1", "fanout": {}, "instances": entries}))
    return path


def entry(instance, status, command_id=CMD):
    return {"instance_id": instance, "segment": "0:1", "command_id": command_id, "status": status,
            "status_details": "", "error": ""}


def test_a_run_that_stopped_cancels_what_was_sent_and_has_not_ended_and_says_so(tmp_path):
    client = boto3.client("ssm", region_name="us-east-1")
    manifest = stopped_manifest(tmp_path, [entry("i-a", "InProgress"), entry("i-b", "Success"),
                                           entry("i-c", "Pending"), entry("i-d", "NotSent", "")])
    warnings = []
    with Stubber(client) as stubber:
        stubber.add_response("cancel_command", {}, {"CommandId": CMD, "InstanceIds": ["i-a"]})
        stubber.add_client_error("cancel_command", service_error_code="InvalidCommandId",
                                 expected_params={"CommandId": CMD, "InstanceIds": ["i-c"]})
        text = fanoutrun.end_run(client, manifest, "interrupted by SIGHUP", warn=warnings.append)
        stubber.assert_no_pending_responses()
    assert text == ("the fan-out was interrupted by SIGHUP after the commands were sent: 1 invocation(s) cancelled; "
                    "the cancel failed on i-c: check those instances")
    got = {e["instance_id"]: e for e in json.loads(manifest.read_text())["instances"]}
    assert (got["i-a"]["status"], got["i-a"]["error"]) == (
        "Cancelled", "instance i-a: cancelled: the fan-out was interrupted by SIGHUP before the invocation ended")
    assert got["i-c"]["error"] == ("instance i-c: the fan-out was interrupted by SIGHUP before the invocation ended, "
                                   "and the cancel failed: check the instance")
    assert [got["i-b"]["error"], got["i-d"]["error"]] == ["", ""]
    assert warnings == ["could not cancel the command on i-c: check the instance"]


def test_a_run_that_stopped_before_any_send_says_so_and_calls_nothing(tmp_path):
    manifest = stopped_manifest(tmp_path, [entry("i-a", "", "")])
    assert fanoutrun.end_run(None, manifest, "stopped by an error (exit status 1)") == \
        "the fan-out was stopped by an error (exit status 1) before any command was sent"
