"""The fan-out's poll (ltsuite.ssm) against botocore's Stubber, for what moto's SSM cannot give:
Failed, TimedOut and Cancelled invocations, a throttled API, an instance that never answers."""
import json

import boto3
import pytest
from botocore.stub import Stubber

from ltsuite.ssm import Invocation, invocation_state, poll, poll_manifest

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
