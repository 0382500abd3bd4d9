"""The fan-out's AWS calls as data (scripts/ssm-fanout.sh through ltsuite.ssm): every call is a Call
(service, operation, parameters) made by one of the builders below, and boto3 is the one client
that makes it (Clients.run). The dry run prints the same Call objects the real run would hand to
boto3 (Call.line), so what it shows is what a run sends.

A parameter too large to print (the command of an instance, hundreds of KB) stays a JSON file
named in Call.json_files: the line names the file, the real call reads it.

The operations (AWS API references): EC2 DescribeInstances, S3 HeadBucket, PutObject (boto3's
upload_file), ListObjectsV2 and GetObject, SSM SendCommand, GetCommandInvocation and
CancelCommand.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The SSM document every instance's command runs with.
DOCUMENT = "AWS-RunShellScript"


@dataclass(frozen=True)
class Call:
    """One AWS call: boto3's client for SERVICE, its method OPERATION, with PARAMS; the keys of
    JSON_FILES are parameters whose value is the JSON in the file named (read when the call is
    made)."""

    service: str
    operation: str
    params: dict[str, Any]
    json_files: dict[str, str] = field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        """The parameters as boto3 gets them (the JSON files read)."""
        loaded = {name: json.loads(Path(path).read_text(encoding="utf-8")) for name, path in self.json_files.items()}
        return {**self.params, **loaded}

    def line(self) -> str:
        """The call as one line: service.operation(Name=value, ...), values as JSON, a file's
        parameter as <json file PATH>."""
        words = [f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in self.params.items()]
        words += [f"{name}=<json file {path}>" for name, path in self.json_files.items()]
        return f"{self.service}.{self.operation}({', '.join(words)})"


class UsageError(ValueError):
    """A setting that cannot make a call (exit status 2, as the shell's usage_error)."""


def tag_filters(tag_filter: str) -> list[dict[str, Any]]:
    """FANOUT_TAG_FILTER (KEY=PATTERN) as DescribeInstances filters on running instances with that
    tag."""
    key, sep, pattern = tag_filter.partition("=")
    if not sep or not key or not pattern:
        raise UsageError(f"FANOUT_TAG_FILTER: '{tag_filter}' is not KEY=PATTERN (e.g. Name=k6-*)")
    return [{"Name": f"tag:{key}", "Values": [pattern]}, {"Name": "instance-state-name", "Values": ["running"]}]


def describe_call(tag_filter: str) -> Call:
    """The lookup of the k6 instances (paginated: Clients.run reads every page)."""
    return Call("ec2", "describe_instances", {"Filters": tag_filters(tag_filter)})


def head_bucket_call(bucket: str) -> Call:
    """The check that the output bucket exists and can be reached."""
    return Call("s3", "head_bucket", {"Bucket": bucket})


def upload_call(path: str, bucket: str, key: str) -> Call:
    """The upload of the scenario files when the commands are too large inline."""
    return Call("s3", "upload_file", {"Filename": path, "Bucket": bucket, "Key": key})


def send_call(instance_id: str, params_file: str, bucket: str, key_prefix: str, delivery_timeout: int,
              comment: str) -> Call:
    """One instance's SendCommand: its command from PARAMS_FILE, the output to S3."""
    return Call("ssm", "send_command",
                {"DocumentName": DOCUMENT, "InstanceIds": [instance_id], "OutputS3BucketName": bucket,
                 "OutputS3KeyPrefix": key_prefix, "TimeoutSeconds": delivery_timeout, "Comment": comment[:100]},
                {"Parameters": params_file})


def invocation_call(command_id: str, instance_id: str) -> Call:
    """The state of one invocation."""
    return Call("ssm", "get_command_invocation", {"CommandId": command_id, "InstanceId": instance_id})


def cancel_call(command_id: str, instance_id: str) -> Call:
    """The cancel of one invocation."""
    return Call("ssm", "cancel_command", {"CommandId": command_id, "InstanceIds": [instance_id]})


def list_call(bucket: str, prefix: str) -> Call:
    """The keys under one invocation's output prefix (paginated)."""
    return Call("s3", "list_objects_v2", {"Bucket": bucket, "Prefix": prefix})


def get_call(bucket: str, key: str) -> Call:
    """One object of an invocation's output."""
    return Call("s3", "get_object", {"Bucket": bucket, "Key": key})


def invoke(client: Any, call: Call) -> Any:
    """Make CALL with CLIENT (boto3's, or a Stubber's). A paginated operation gives the list of
    its pages."""
    if call.operation in ("describe_instances", "list_objects_v2"):
        return list(client.get_paginator(call.operation).paginate(**call.kwargs()))
    return getattr(client, call.operation)(**call.kwargs())


class Clients:
    """boto3 clients for the fan-out's region and profile (both optional), one per service. The
    endpoint and retries come from the usual AWS settings (AWS_ENDPOINT_URL, AWS_MAX_ATTEMPTS);
    QUICK (the dry run's lookup) bounds the connect and read timeouts to 5 and 20 s, so a dry
    run answers where AWS cannot be reached."""

    def __init__(self, region: str = "", profile: str = "", quick: bool = False) -> None:
        self.region, self.profile, self.quick = region, profile, quick
        self._clients: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        """The client of SERVICE, made on first use."""
        if service not in self._clients:
            import boto3  # installed with the AWS tools (make aws-tools)
            from botocore.config import Config

            config = Config(connect_timeout=5, read_timeout=20) if self.quick else None
            session = boto3.session.Session(profile_name=self.profile or None, region_name=self.region or None)
            self._clients[service] = session.client(service, config=config)
        return self._clients[service]

    def run(self, call: Call) -> Any:
        """Make CALL with its service's client."""
        return invoke(self.client(call.service), call)

    def describe(self) -> str:
        """Where the calls go, for the dry run's header."""
        where = [f"region {self.region}" if self.region else "the default region",
                 f"profile {self.profile}" if self.profile else "the default credentials"]
        return ", ".join(where)


def instance_ids(pages: list[dict[str, Any]]) -> list[str]:
    """The instance ids of DescribeInstances' pages, sorted (so a given fleet always gets the same
    segments) and without repeats."""
    return sorted({inst["InstanceId"] for page in pages for res in page.get("Reservations") or []
                   for inst in res.get("Instances") or []})
