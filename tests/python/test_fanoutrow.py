"""A fan-out cell's rows from its collected outputs (ltsuite.fanoutrow), over a recorded k6 summary:
the instances that failed are named and left out, the notes say where the percentiles come from,
an InfluxDB that cannot be reached is a warning, not a lost row. The real InfluxDB's percentiles:
tests/integration/ssm.bats."""
import json
import shutil
import socket

from ltsuite import fanoutrow, histogram, latency
from ltsuite.fanoutplan import influx_db
from ltsuite.fanoutrow import NOT_MERGEABLE, influx_percentiles, write_rows

from conftest import ROOT

FIXTURE = ROOT / "tests/python/fixtures/tiny-spike"


def fan_out_run(tmp_path, histograms=True, influxdb_url=""):
    """A collected fan-out run: i-a and i-b returned the recorded summary (and, with HISTOGRAMS, a
    histogram of its samples); i-c failed."""
    cell_dir = tmp_path / "cells/01"
    shutil.copyfile(FIXTURE / "cell.env", tmp_path / "cell.env")
    (cell_dir / "instances").mkdir(parents=True)
    shutil.copyfile(FIXTURE / "cell.env", cell_dir / "cell.env")
    durations = latency.answered_durations(latency.read_lines(FIXTURE / "k6-samples.json.gz"))
    for instance in ("i-a", "i-b", "i-c"):
        (cell_dir / "instances" / instance).mkdir()
    for instance in ("i-a", "i-b"):
        shutil.copyfile(FIXTURE / "summary.json", cell_dir / "instances" / instance / "summary.json")
        if histograms:
            (cell_dir / "instances" / instance / "histogram.json").write_text(
                json.dumps(histogram.of(durations).to_json()))
    entries = [{"instance_id": i, "segment": s, "command_id": "c", "status": st, "status_details": "", "error": e}
               for i, s, st, e in (("i-a", "0:1/3", "Success", ""), ("i-b", "1/3:2/3", "Success", ""),
                                   ("i-c", "2/3:1", "Failed", "instance i-c: invocation Failed"))]
    (tmp_path / "manifest.json").write_text(json.dumps({
        "run_id": "r1", "cell": {"id": "01"}, "axes": ["VUS"], "warnings": ["earlier"],
        "fanout": {"influxdb_url": influxdb_url, "influxdb_query_url": ""}, "instances": entries}))
    return cell_dir


def test_the_cells_row_adds_up_the_instances_that_did_not_fail_and_names_the_others(tmp_path):
    cell_dir = fan_out_run(tmp_path)
    row = write_rows(tmp_path)
    one = json.loads((cell_dir / "instances/i-a/row.json").read_text())
    assert [row["status"], row["error"], row["instances"]] == ["failed", "instance i-c: invocation Failed", 2]
    assert row["http_reqs"] == 2 * one["http_reqs"] and row["vus_max"] == 2 * one["vus_max"]
    assert not (cell_dir / "instances/i-c/row.json").exists()
    assert row["axes"] == {"VUS": one["axes"]["VUS"]}
    assert row["lat_p95_ms"] is not None and row["notes"].startswith("latency percentiles from the merged histograms")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["notes"] == row["notes"] and manifest["warnings"] == ["earlier"]
    assert json.loads((cell_dir / "row.json").read_text()) == row


def test_without_histograms_and_influxdb_the_percentiles_stay_empty_and_the_notes_say_why(tmp_path):
    fan_out_run(tmp_path, histograms=False)
    row = write_rows(tmp_path)
    assert [row["lat_med_ms"], row["lat_p99_ms"]] == [None, None] and row["lat_max_ms"] is not None
    assert row["notes"] == f"no latency histogram from i-a, i-b (the instance needs python3 to reduce k6's samples; " \
                           f"see its stdout.txt); {NOT_MERGEABLE}"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_influxdb_that_cannot_be_reached_leaves_the_percentiles_empty_with_a_warning(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/k6"
    fan_out_run(tmp_path, histograms=False, influxdb_url=url)
    row = write_rows(tmp_path)
    assert row["lat_p95_ms"] is None
    assert f"percentiles not mergeable, and InfluxDB gave none: query to {url[:-3]} failed: " in row["notes"]
    warnings = json.loads((tmp_path / "manifest.json").read_text())["warnings"]
    assert warnings[0] == "earlier" and warnings[1].startswith("no percentiles from InfluxDB: query to ")


def test_the_influxdb_database_is_the_urls_path_and_odd_ids_are_not_queried():
    assert [influx_db("http://10.0.0.5:8086/k6"), influx_db("http://10.0.0.5:8086/k6?x=1"),
            influx_db("http://10.0.0.5:8086")] == ["k6", "k6", ""]
    assert influx_percentiles("http://x/k6", "", "r1'; DROP", "01") == \
        (None, "run or cell id with unexpected characters: r1'; DROP 01")
    assert fanoutrow.main(["a", "b"]) == 2
