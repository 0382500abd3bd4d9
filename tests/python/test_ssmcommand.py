"""Each fan-out instance's command (ltsuite.ssmcommand): its words read back unchanged by a shell,
the scenario files inline or through S3 by FANOUT_MAX_COMMAND_BYTES, the instances' list.
tests/unit/ssm.bats checks a whole command made from a real k6 archive; tests/integration/ssm.bats
runs them."""
import json
import subprocess

import pytest

from ltsuite import ssmcommand
from ltsuite.ssmcommand import Settings, TooLarge, sh_line, write_commands


def test_a_shell_reads_every_word_back_unchanged():
    words = ["plain", "it's", "a b", "$(touch /tmp/x)", "", "*", "back\\slash", "x=1,2"]
    run = subprocess.run(["sh", "-c", f"for w in {sh_line(*words)}; do printf '[%s]' \"$w\"; done"],
                         capture_output=True, text=True, timeout=30, check=True)
    assert run.stdout == "[plain][it's][a b][$(touch /tmp/x)][][*][back\\slash][x=1,2]"


def settings(tmp_path, bundle_bytes=2000):
    (tmp_path / "scenarios.tar.gz").write_bytes(b"x" * bundle_bytes)
    return Settings(run_id="r1", cell_id="01", start_at=1700000000, cell_env="SCENARIO=spike\nVUS=4\nTARGET_URL=old\n",
                    k6_args=["--tag", "run_id=r1", "--tag", "team=a b", "--summary-trend-stats=p(99)"],
                    bundle=tmp_path / "scenarios.tar.gz", target_url="http://127.0.0.1:9", region="eu-west-1")


def sizes(tmp_path, instances):
    return max(len((tmp_path / f"params-{i}.json").read_bytes()) for i in instances)


def test_the_scenario_files_go_inline_unless_a_command_would_be_too_large_then_through_s3(tmp_path):
    s, ids = settings(tmp_path), ["i-a", "i-b"]
    assert write_commands(tmp_path, s, ids, timeout=60, max_bytes=10**6, bucket="b", key_prefix="k/r1/01") == "inline"
    inline = sizes(tmp_path, ids)
    command = (tmp_path / "command-i-b.sh").read_text()
    assert "LT_BUNDLE_S3=''" in command.split("\n") and "LT_AWS_ARGS=''" in command.split("\n")
    assert write_commands(tmp_path, s, ids, timeout=60, max_bytes=inline - 1, bucket="b", key_prefix="k/r1/01") == "s3"
    assert sizes(tmp_path, ids) <= inline - 1
    lines = (tmp_path / "command-i-b.sh").read_text().split("\n")
    assert "LT_BUNDLE_S3=s3://b/k/r1/01/scenarios.tar.gz" in lines and "LT_BUNDLE_B64=''" in lines
    assert "LT_AWS_ARGS='--region" in lines  # the instance's own aws, in the region, never a profile
    with pytest.raises(TooLarge, match=r"even with the scenario files in S3 \(FANOUT_MAX_COMMAND_BYTES=100\)"):
        write_commands(tmp_path, s, ids, timeout=60, max_bytes=100, bucket="b", key_prefix="k/r1/01")


def test_each_instance_gets_its_segment_its_tag_and_the_cells_values_but_those_the_command_sets(tmp_path):
    write_commands(tmp_path, settings(tmp_path), ["i-a", "i-b", "i-c"], timeout=60, max_bytes=10**6, bucket="b",
                   key_prefix="k")
    command = (tmp_path / "command-i-b.sh").read_text()
    for line in ("  --execution-segment 1/3:2/3 \\", "  --execution-segment-sequence 0,1/3,2/3,1 \\",
                 "  --tag run_id=r1 \\", "  --tag 'team=a b' \\", "  --tag instance=i-b \\", "  -e VUS=4 \\",
                 "  -e TARGET_URL=http://127.0.0.1:9 \\", "  script.tar"):
        assert line in command.split("\n"), line
    assert "-e TARGET_URL=old" not in command
    params = json.loads((tmp_path / "params-i-b.json").read_text())
    assert params["commands"] == command.split("\n")[:-1] and params["executionTimeout"] == ["60"]
    assert json.loads((tmp_path / "instances.json").read_text()) == [
        {"instance_id": i, "segment": seg, "command_id": "", "status": "", "status_details": "", "error": ""}
        for i, seg in (("i-a", "0:1/3"), ("i-b", "1/3:2/3"), ("i-c", "2/3:1"))]
    # The logic is the repo's instance script, as it is, after the settings.
    assert command.endswith(ssmcommand.INSTANCE_SCRIPT.read_text())
    subprocess.run(["sh", "-n", str(tmp_path / "command-i-b.sh")], check=True, timeout=30)
