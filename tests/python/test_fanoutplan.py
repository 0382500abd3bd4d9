"""The plan both fan-outs share (ltsuite.fanoutplan) and the k6-operator's names (ltsuite.k6operator):
the target's checks, the URLs' and the options' errors."""
from pathlib import Path

import pytest

from ltsuite import fanoutmain, k6operator
from ltsuite.fanoutplan import Cell, Stop, check_target, url_host


def cell(target: str, allow: str = "0", **settings: str) -> Cell:
    return Cell(matrix=Path("m.matrix"), number=1, of=1, id="01", work=Path("."),
                env={"TARGET_URL": target, "ALLOW_REMOTE_TARGET": allow}, settings=settings)


@pytest.mark.parametrize("url, host", [("http://127.0.0.1:8080/x", "127.0.0.1"), ("http://[::1]:80", "[::1]"),
                                       ("https://[2001:db8::5]:8080", "[2001:db8::5]"), ("http://h?q", "h")])
def test_the_host_of_a_target_keeps_an_ipv6_addresss_brackets_and_drops_the_port(url, host):
    assert url_host(url) == host


def test_a_target_off_loopback_needs_allow_remote_target_but_a_dry_run_only_warns(capsys):
    with pytest.raises(Stop) as stop:
        check_target(cell("http://10.9.8.7:8080"), dry_run=False)
    assert (stop.value.code, str(stop.value)) == \
        (2, "TARGET_URL: 10.9.8.7 is not loopback; set ALLOW_REMOTE_TARGET=1 to send load there")
    assert check_target(cell("http://10.9.8.7:8080"), dry_run=True) == "http://10.9.8.7:8080"
    assert "the real run needs ALLOW_REMOTE_TARGET=1" in capsys.readouterr().err
    assert check_target(cell("http://10.9.8.7:8080", allow="1"), dry_run=False) == "http://10.9.8.7:8080"


def test_an_influxdb_url_with_a_password_or_without_a_database_is_refused():
    with pytest.raises(Stop, match="user or password") as stop:
        check_target(cell("http://127.0.0.1:9", FANOUT_INFLUXDB_URL="http://k6:s3cret@h:8086/k6"), dry_run=True)
    assert "s3cret" not in str(stop.value)
    with pytest.raises(Stop, match="names no database"):
        check_target(cell("http://127.0.0.1:9", FANOUT_INFLUXDB_URL="http://h:8086"), dry_run=True)


def test_both_fan_outs_refuse_a_bad_cell_number_alike(tmp_path):
    for parse in (fanoutmain.parse, k6operator.parse):
        with pytest.raises(Stop) as stop:
            parse(["--cell", "0", str(tmp_path / "m.matrix")])
        assert stop.value.code == 2 and "--cell needs a cell number (1 = the first)" in str(stop.value)


def test_an_instance_id_is_checked_before_anything_starts(tmp_path):
    matrix = tmp_path / "m.matrix"
    matrix.write_text("VUS=1\n")
    with pytest.raises(Stop, match="'i-1;reboot' is not an instance id"):
        fanoutmain.parse(["--instances", "i-1;reboot", str(matrix)])
    assert fanoutmain.parse(["--instances", "i-2,i-1,i-2", str(matrix)]).instances == ["i-1", "i-2"]


def test_a_k8s_name_is_lower_case_at_most_48_characters_and_ends_alphanumeric():
    assert k6operator.k8s_name("k6-20250101-120000-Default-K8S-01_delay_ms-10") == "k6-20250101-120000-default-k8s-01-delay-ms-10"
    # Cut at 48, then no trailing "-".
    assert k6operator.k8s_name("k6-" + "a" * 44 + "-b") == "k6-" + "a" * 44
    assert len(k6operator.k8s_name("x" * 80)) == 48
