"""Play a TestRun's runner pods on this machine, as k6-operator would run them, and save their logs.

  python3 play_testrun.py TESTRUN_YAML K6 POD_ROOT LOGS_DIR

For each runner i of N: the ConfigMap's files where the pod sees them (the script volume at /test, the
runner volume's items below /ltsuite), rooted at POD_ROOT/<pod>/; the pod's environment from
runner.env (paths moved below POD_ROOT, k6 itself is K6, the downward API's pod name filled in); and
the command k6-operator's runner job has (pkg/resources/jobs/runner.go): `k6 run --quiet
--execution-segment=... --execution-segment-sequence=... ARGUMENTS /test/archive.tar
--address=...:6565 --paused --tag instance_id=i --tag testrun_name=NAME`, `k6` found on the pod's
PATH. Each pod's REST API listens on its own loopback port; once all answer, each is started as
k6-operator's starter does (PATCH /v1/status, paused false). Every process is bounded (60 s) and
ended by its pid if it outlives that. Exit status 0 when every pod's process ended with 0.
"""
import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def segment_flags(index, total):
    """k6-operator's pkg/segmentation NewCommandFragments, for runner INDEX (1-based) of TOTAL."""
    def part(i):
        return "0" if i == 0 else "1" if i == total else f"{i}/{total}"
    sequence = ",".join(["0"] + [f"{i}/{total}" for i in range(1, total)] + ["1"])
    return [f"--execution-segment={part(index - 1)}:{part(index)}", f"--execution-segment-sequence={sequence}"]


def main(testrun_yaml, k6, pod_root, logs_dir):
    docs = [d for d in yaml.safe_load_all(Path(testrun_yaml).read_text()) if d]
    configmap = next(d for d in docs if d["kind"] == "ConfigMap")
    run = next(d for d in docs if d["kind"] == "TestRun")
    spec, name = run["spec"], run["metadata"]["name"]
    total = spec["parallelism"]
    volume = next(v for v in spec["runner"]["volumes"] if "configMap" in v)
    Path(logs_dir).mkdir(parents=True, exist_ok=True)
    pods = []
    for index in range(1, total + 1):
        pod = f"{name}-{index}"
        root = Path(pod_root) / pod
        (root / "test").mkdir(parents=True, exist_ok=True)
        for key, value in configmap.get("binaryData", {}).items():
            (root / "test" / key).write_bytes(base64.b64decode(value))
        for item in volume["configMap"]["items"]:
            path = root / "ltsuite" / item["path"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(configmap["data"][item["key"]])
            path.chmod(volume["configMap"]["defaultMode"])
        env = {"HOME": str(root)}
        for entry in spec["runner"]["env"]:
            value = entry.get("value")
            if "valueFrom" in entry:
                value = pod  # the downward API's metadata.name
            env[entry["name"]] = value.replace("/ltsuite-k6/k6", k6).replace("/ltsuite", str(root / "ltsuite")) \
                .replace("/tmp/k6-fanout", str(root / "work"))
        env["LT_KEEP_SAMPLES"] = "1"  # the test checks the percentiles against every raw sample
        port = free_port()
        command = ["k6", "run", "--quiet"] + (segment_flags(index, total) if total > 1 else [])
        command += spec.get("arguments", "").split()
        command += [str(root / "test" / spec["script"]["configMap"]["file"]), f"--address=127.0.0.1:{port}",
                    "--paused", "--tag", f"instance_id={index}", "--tag", f"testrun_name={name}"]
        exe = next(Path(d) / "k6" for d in env["PATH"].split(":") if (Path(d) / "k6").is_file())
        log = open(Path(logs_dir) / f"{pod}.log", "w")
        proc = subprocess.Popen([str(exe)] + command[1:], env=env, stdout=log, stderr=subprocess.STDOUT,
                                cwd=root, start_new_session=True)
        pods.append((pod, port, proc, log))
    deadline = time.time() + 60
    body = json.dumps({"data": {"attributes": {"paused": False}, "id": "default", "type": "status"}}).encode()
    waiting = {pod for pod, *_ in pods}
    while waiting and time.time() < deadline:
        for pod, port, proc, _ in pods:
            if pod in waiting:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/status", timeout=1).read()
                    waiting.discard(pod)
                except OSError:
                    pass
        time.sleep(0.2)
    for pod, port, proc, _ in pods:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/status", data=body, method="PATCH",
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=5).read()
    status = 0
    for pod, port, proc, log in pods:
        try:
            status |= proc.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the pod's own process group: its sh and the k6 it started
            proc.wait()
            status |= 1
        log.close()
    return status


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
