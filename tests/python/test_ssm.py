"""The fan-out's poll (ltsuite.ssm) against botocore's Stubber, for what moto's SSM cannot give:
Failed, TimedOut and Cancelled invocations, a throttled API, an instance that never answers."""
import json
import os
import signal
import subprocess
import sys

import boto3
import pytest
from botocore.stub import Stubber

from ltsuite.ssm import Invocation, invocation_state, poll, poll_manifest

from conftest import ROOT

CMD = "11111111-2222-3333-4444-555555555555"


@pytest.fixture
def ssm():
    client = boto3.client("ssm", region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def answer(stubber, instance, status, details="", code=-1):
    stubber.add_response("get_command_invocation",
                         {"CommandId": CMD, "InstanceId": instance, "Status": status, "StatusDetails": details,
                          "ResponseCode": code},
                         {"CommandId": CMD, "InstanceId": instance})


class Clock:
    """A clock that moves only when the poller sleeps."""

    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def run_poll(client, invocations, deadline=1010.0):
    clock, reports = Clock(), []
    poll(client, invocations, deadline=deadline, interval=2, clock=clock.time, sleep=clock.sleep,
         report=reports.append)
    return clock, reports


@pytest.mark.parametrize("status,details,code", [("Failed", "Failed", 107), ("TimedOut", "Execution Timed Out", -1),
                                                 ("Cancelled", "Cancelled", -1)])
def test_an_invocation_that_ends_badly_keeps_ssms_status_and_details(ssm, status, details, code):
    client, stubber = ssm
    answer(stubber, "i-a", "InProgress")
    answer(stubber, "i-a", status, details, code)
    inv = Invocation("i-a", CMD)
    clock, reports = run_poll(client, [inv])
    assert inv.status == status
    assert inv.status_details == details + (f" (exit code {code})" if code != -1 else "")
    assert inv.error == ""  # the collector names it, with the output it finds
    assert clock.sleeps == [2]
    assert reports == ["waiting for 1 of 1: i-a:InProgress"]


def test_a_throttled_api_is_unknown_and_polling_goes_on(ssm):
    client, stubber = ssm
    stubber.add_client_error("get_command_invocation", service_error_code="ThrottlingException",
                             service_message="Rate exceeded", http_status_code=400)
    answer(stubber, "i-a", "Success")
    inv = Invocation("i-a", CMD)
    _, reports = run_poll(client, [inv])
    assert inv.status == "Success"
    assert reports and "i-a:Unknown" in reports[0]


def test_an_invocation_ssm_does_not_know_yet_is_pending(ssm):
    client, stubber = ssm
    stubber.add_client_error("get_command_invocation", service_error_code="InvocationDoesNotExist",
                             http_status_code=400)
    assert invocation_state(client, Invocation("i-a", CMD)) == ("Pending", "not registered yet")


def test_an_instance_that_never_answers_is_cancelled_and_timed_out_at_the_deadline(ssm):
    client, stubber = ssm
    # i-a ends at once; i-b stays Pending (never picked up) past the deadline of 1005.
    answer(stubber, "i-a", "Success")
    for _ in range(4):  # at 1000, 1002, 1004, 1006
        answer(stubber, "i-b", "Pending")
    stubber.add_response("cancel_command", {}, {"CommandId": CMD, "InstanceIds": ["i-b"]})
    good, silent = Invocation("i-a", CMD), Invocation("i-b", CMD)
    clock, _ = run_poll(client, [good, silent], deadline=1005.0)
    assert (good.status, good.error) == ("Success", "")
    assert silent.status == "TimedOut"
    assert silent.error.startswith("instance i-b: timed out: still Pending at the deadline")
    assert silent.error.endswith("; cancelled")
    assert clock.now == 1006.0


def test_a_cancel_that_fails_is_named(ssm):
    client, stubber = ssm
    answer(stubber, "i-b", "InProgress")
    stubber.add_client_error("cancel_command", service_error_code="InvalidCommandId", http_status_code=400)
    silent = Invocation("i-b", CMD)
    run_poll(client, [silent], deadline=1000.0)
    assert silent.status == "TimedOut"
    assert silent.error.endswith("(the cancel failed: check the instance)")


def test_an_instance_never_sent_to_is_not_polled(ssm):
    client, _ = ssm
    unsent = Invocation("i-c", "", status="NotSent", error="instance i-c: send-command failed: x")
    run_poll(client, [unsent])
    assert (unsent.status, unsent.error) == ("NotSent", "instance i-c: send-command failed: x")


def test_the_manifest_gets_the_states_and_keeps_everything_else(ssm, tmp_path):
    client, stubber = ssm
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({
        "run_id": "r", "status": "running", "fanout": {"deadline_epoch": 1010, "poll_interval_s": 1},
        "instances": [{"instance_id": "i-a", "segment": "0:1", "command_id": CMD, "status": "Pending",
                       "status_details": "", "error": ""}]}))
    answer(stubber, "i-a", "Failed", "Failed", 3)
    poll_manifest(manifest, client, clock=lambda: 1000.0, sleep=lambda s: None)
    data = json.loads(manifest.read_text())
    assert data["run_id"] == "r" and data["status"] == "running"
    assert data["instances"] == [{"instance_id": "i-a", "segment": "0:1", "command_id": CMD, "status": "Failed",
                                  "status_details": "Failed (exit code 3)", "error": ""}]


# --- collect: the outputs in S3 (moto's S3, in process) ---------------------------------------

from moto import mock_aws  # noqa: E402

from ltsuite.ssm import SUMMARY_BEGIN, SUMMARY_END, collect_manifest, extract_summary, k6_exit_status  # noqa: E402

BUCKET = "out"


def stdout_of(summary, status=0):
    body = f"{SUMMARY_BEGIN}\n{json.dumps(summary)}\n{SUMMARY_END}\n" if summary is not None else ""
    return f"k6 log\n{body}k6-fanout exit status: {status}\n"


@pytest.fixture(autouse=True)
def no_aws_endpoint(monkeypatch):
    """moto's in-process mock answers AWS's own endpoints, not an AWS_ENDPOINT_URL of the shell."""
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


def collect_case(tmp_path, instances, outputs):
    """Collect a run whose instances are INSTANCES (manifest entries) and whose S3 holds OUTPUTS
    ({instance: stdout text})."""
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"fanout": {"s3_bucket": BUCKET, "s3_key_prefix": "k6/r/01"},
                                     "instances": instances}))
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t")
        s3.create_bucket(Bucket=BUCKET)
        for instance, text in outputs.items():
            s3.put_object(Bucket=BUCKET, Key=f"k6/r/01/{CMD}/{instance}/awsrunShellScript/0.awsrunShellScript/stdout",
                          Body=text.encode())
        invocations = collect_manifest(manifest, tmp_path / "cell", tmp_path, s3)
    return {inv.instance_id: inv for inv in invocations}, json.loads(manifest.read_text())


def entry(instance, status="Success", details="", error="", command_id=CMD):
    return {"instance_id": instance, "segment": "0:1", "command_id": command_id, "status": status,
            "status_details": details, "error": error}


def test_a_good_instance_gets_its_summary_and_no_error(tmp_path):
    got, manifest = collect_case(tmp_path, [entry("i-a")], {"i-a": stdout_of({"metrics": {}})})
    assert got["i-a"].error == ""
    assert json.loads((tmp_path / "cell/instances/i-a/summary.json").read_text()) == {"metrics": {}}
    assert manifest["instances"][0]["error"] == ""


def test_a_failed_invocation_is_named_with_k6s_exit_status(tmp_path):
    got, _ = collect_case(tmp_path, [entry("i-a", "Failed", "Failed (exit code 107)", "stale")],
                          {"i-a": stdout_of({"metrics": {}}, 107)})
    assert got["i-a"].error == ("instance i-a: invocation Failed (Failed (exit code 107)), k6 exit status 107; "
                                "see cell/instances/i-a/stdout.txt")
    assert (tmp_path / "cell/instances/i-a/summary.json").is_file()  # kept for reading


def test_success_without_output_or_without_a_summary_is_an_error(tmp_path):
    got, _ = collect_case(tmp_path, [entry("i-a"), entry("i-b")], {"i-b": stdout_of(None, 1)})
    assert got["i-a"].error.startswith(f"instance i-a: Success, but no output at s3://{BUCKET}/k6/r/01/{CMD}/i-a/")
    assert got["i-b"].error == "instance i-b: its output has no k6 summary (k6 exit status 1); see cell/instances/i-b/stdout.txt"


def test_a_timed_out_or_unsent_instance_keeps_its_error(tmp_path):
    timed_out = entry("i-a", "TimedOut", error="instance i-a: timed out: still Pending at the deadline; cancelled")
    unsent = entry("i-b", "NotSent", error="instance i-b: send-command failed: x", command_id="")
    got, _ = collect_case(tmp_path, [timed_out, unsent], {})
    assert got["i-a"].error == timed_out["error"]
    assert got["i-b"].error == unsent["error"]
    assert not (tmp_path / "cell/instances/i-b/stdout.txt").exists()


def test_the_summary_is_the_json_between_the_markers():
    assert extract_summary(stdout_of({"a": 1})) == {"a": 1}
    assert extract_summary(f"{SUMMARY_BEGIN}\nnot json\n{SUMMARY_END}\n") is None
    assert extract_summary(f"{SUMMARY_BEGIN}\n[1]\n{SUMMARY_END}\n") is None
    assert extract_summary(f"{SUMMARY_BEGIN}\n{{\"a\": 1}}\n") is None  # cut short
    assert k6_exit_status("k6-fanout exit status: 3\nk6-fanout exit status: 99\n") == "99"
    assert k6_exit_status("nothing") == ""


# --- send ---------------------------------------------------------------------------------------

from ltsuite.ssm import send  # noqa: E402


def test_each_instance_gets_one_send_and_a_failed_send_is_named(ssm, tmp_path):
    client, stubber = ssm
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"run_id": "r1", "cell": {"id": "01"},
                                    "fanout": {"s3_bucket": "out", "s3_key_prefix": "k6/r1/01"},
                                    "instances": [entry("i-a", "", command_id=""), entry("i-b", "", command_id="")]}))
    params = {"commands": ["echo hi"], "executionTimeout": ["60"]}
    for instance in ("i-a", "i-b"):
        (tmp_path / f"params-{instance}.json").write_text(json.dumps(params))
    expected = {"DocumentName": "AWS-RunShellScript", "Parameters": params, "OutputS3BucketName": "out",
                "OutputS3KeyPrefix": "k6/r1/01", "TimeoutSeconds": 45}
    stubber.add_response("send_command", {"Command": {"CommandId": CMD}},
                         {**expected, "InstanceIds": ["i-a"], "Comment": "k6 fan-out r1 01 1/2"})
    stubber.add_client_error("send_command", service_error_code="ThrottlingException", service_message="Rate exceeded",
                             expected_params={**expected, "InstanceIds": ["i-b"], "Comment": "k6 fan-out r1 01 2/2"})
    warnings = []
    send(client, manifest, tmp_path, 45, warn=warnings.append)
    written = {e["instance_id"]: e for e in json.loads(manifest.read_text())["instances"]}
    assert (written["i-a"]["command_id"], written["i-a"]["status"], written["i-a"]["error"]) == (CMD, "Pending", "")
    assert (written["i-b"]["command_id"], written["i-b"]["status"]) == ("", "NotSent")
    assert written["i-b"]["error"].startswith("instance i-b: send-command failed: ")
    assert "ThrottlingException" in written["i-b"]["error"]
    assert warnings == [written["i-b"]["error"]]


from ltsuite.histogram import of  # noqa: E402
from ltsuite.ssm import HISTOGRAM_BEGIN, HISTOGRAM_END  # noqa: E402


def test_the_histogram_an_instance_printed_is_kept_beside_its_summary(tmp_path):
    shipped = json.dumps(of([12.5, 30.0, 31.0]).to_json(), separators=(",", ":"))
    good = stdout_of({"metrics": {}}).replace("k6-fanout exit", f"{HISTOGRAM_BEGIN}\n{shipped}\n{HISTOGRAM_END}\nk6-fanout exit")
    bad = stdout_of({"metrics": {}}).replace("k6-fanout exit", f"{HISTOGRAM_BEGIN}\n{{\"count\": 3}}\n{HISTOGRAM_END}\nk6-fanout exit")
    (tmp_path / "cell/instances/i-b").mkdir(parents=True)
    (tmp_path / "cell/instances/i-b/histogram.json").write_text("stale")
    got, _ = collect_case(tmp_path, [entry("i-a"), entry("i-b"), entry("i-c")],
                          {"i-a": good, "i-b": bad, "i-c": stdout_of({"metrics": {}})})
    assert json.loads((tmp_path / "cell/instances/i-a/histogram.json").read_text()) == json.loads(shipped)
    # Not a histogram, or none printed: no file (a stale one goes), and the summary still counts.
    assert not (tmp_path / "cell/instances/i-b/histogram.json").exists()
    assert not (tmp_path / "cell/instances/i-c/histogram.json").exists()
    assert [got[i].error for i in ("i-a", "i-b", "i-c")] == ["", "", ""]


#: A send run as scripts/ssm-fanout.sh runs it (python3 -m ltsuite.ssm send, in a process of its
#: own), against botocore's Stubber, with SIGNAL sent to itself the moment SendCommand has answered:
#: after SSM accepted the command, before send() wrote its id into the manifest.
SIGNALLED_SEND = """
import os, signal, sys
from pathlib import Path

import boto3
from botocore.stub import Stubber

from ltsuite.ssm import send

number = int(sys.argv[3])
# The signal's usual effect, whatever the test runner's shell left ignored.
signal.signal(number, signal.default_int_handler if number == signal.SIGINT else signal.SIG_DFL)
client = boto3.client("ssm", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t")
stubber = Stubber(client)
for command_id in sys.argv[4:]:
    stubber.add_response("send_command", {"Command": {"CommandId": command_id}})
stubber.activate()
client.meta.events.register("after-call.ssm.SendCommand", lambda **_: os.kill(os.getpid(), number))
send(client, Path(sys.argv[1]), Path(sys.argv[2]), 45)
"""


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_between_the_send_and_its_record_still_leaves_the_command_id_recorded(tmp_path, number):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"run_id": "r1", "cell": {"id": "01"},
                                    "fanout": {"s3_bucket": "out", "s3_key_prefix": "k6/r1/01"},
                                    "instances": [entry("i-a", "", command_id=""), entry("i-b", "", command_id="")]}))
    for instance in ("i-a", "i-b"):
        (tmp_path / f"params-{instance}.json").write_text(json.dumps({"commands": ["echo hi"]}))
    other = "99999999-2222-3333-4444-555555555555"
    run = subprocess.run([sys.executable, "-c", SIGNALLED_SEND, str(manifest), str(tmp_path), str(int(number)),
                          CMD, other],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")},
                         timeout=60, check=False)
    # The signal still ends the send, with its usual effect, once the id is recorded...
    assert run.returncode == -number, run.stderr
    written = {e["instance_id"]: e for e in json.loads(manifest.read_text())["instances"]}
    # ...so the invocation SSM accepted is in the manifest, not ended: what ssm-fanout.sh's on_exit
    # reads back (load_instances) and cancels (ltsuite.fanoutmain record_end).
    assert (written["i-a"]["command_id"], written["i-a"]["status"]) == (CMD, "Pending")
    # Nothing was sent after it.
    assert (written["i-b"]["command_id"], written["i-b"]["status"]) == ("", "")
