"""Two readings of the same host compared (make doctor BEFORE=...), over recorded readings:
tests/python/fixtures/doctor-compare/chain-before and chain-after are the doctor's directories (doctor.json
as it wrote them) of the suite's target in a namespace under 40 kept-alive k6 users: before, started
under somaxconn 8 and raised to 4096 after (backlog 8); after, the same Tomcat restarted (backlog
4096), the same load."""
import json
from pathlib import Path

import pytest

from ltsuite import doctorcompare

FIXTURES = Path(__file__).parent / "fixtures" / "doctor-compare"


def reading(name):
    return doctorcompare.load(FIXTURES / name)


def changed(changes, group):
    return {c.name: (c.before, c.after) for c in changes if c.group == group and c.changed}


def test_the_restart_shows_the_backlog_raised_and_the_overflows_gone():
    changes = doctorcompare.compare(reading("chain-before"), reading("chain-after"))
    listeners = changed(changes, "listener")
    assert listeners["[::ffff:198.18.77.5]:18080 backlog"] == (8, 4096)
    rates = changed(changes, "rate")
    before_rate, after_rate = rates["ListenOverflows/s"]
    assert before_rate > 10 and after_rate == 0
    findings = {c.name: (c.before, c.after) for c in changes if c.group == "finding"}
    assert findings["accept-queue-overflows"] == ("critical", None)
    assert findings["backlog-capped-at-start"] == ("warning", None)
    # The sysctls and Tomcat's settings are the same: the restart alone changed the listener.
    assert changed(changes, "setting") == {}


def test_a_reading_compared_with_itself_changes_nothing():
    changes = doctorcompare.compare(reading("chain-before"), reading("chain-before"))
    assert not [c for c in changes if c.changed]
    assert {c.group for c in changes} == {"setting", "listener", "rate", "finding"}


def test_readings_of_another_port_or_host_are_refused():
    other = reading("chain-after")
    other["port"] = 9090
    with pytest.raises(doctorcompare.NotComparable, match="port 18080 and 9090"):
        doctorcompare.compare(reading("chain-before"), other)
    with pytest.raises(doctorcompare.NotComparable, match="not of port 9090 on vm"):
        doctorcompare.check(FIXTURES / "chain-before", 9090, "vm")
    doctorcompare.check(FIXTURES / "chain-before", 18080, "vm")


def test_a_directory_without_a_reading_is_named(tmp_path):
    with pytest.raises(doctorcompare.NotComparable, match=f"{tmp_path}/doctor.json: not a doctor's reading"):
        doctorcompare.load(tmp_path)
    (tmp_path / "doctor.json").write_text("{}")
    with pytest.raises(doctorcompare.NotComparable, match="no port or findings"):
        doctorcompare.load(tmp_path)


def test_the_comparison_is_written_beside_the_new_reading(tmp_path):
    after = tmp_path / "after"
    after.mkdir()
    (after / "doctor.json").write_text((FIXTURES / "chain-after" / "doctor.json").read_text())
    text = doctorcompare.write(FIXTURES / "chain-before", after)
    assert "findings gone: " in text and "accept-queue-overflows" in text.split("findings gone: ")[1]
    assert "[::ffff:198.18.77.5]:18080 backlog 8 -> 4096" in text
    data = json.loads((after / "compare.json").read_text())
    assert any(c["name"] == "ListenOverflows/s" and c["changed"] for c in data["changes"])
    assert "| accept-queue-overflows | critical | - | yes |" in (after / "compare.md").read_text()
