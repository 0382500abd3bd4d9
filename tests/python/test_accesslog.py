"""Tomcat's access log as the suite writes it (scripts/lib/target.sh, target_accesslog_env) read by
ltsuite.accesslog: the fields of a line, what counts as the load, and the app_* figures."""
from pathlib import Path

from ltsuite import accesslog
from ltsuite.accesslog import AppRequest, app_figures, load_requests, parse_line, read_access_log

ROOT = Path(__file__).resolve().parents[2]


def test_the_pattern_read_is_the_pattern_the_target_is_given():
    target_sh = (ROOT / "scripts" / "lib" / "target.sh").read_text()
    assert "readonly TARGET_ACCESS_LOG_PATTERN='%{begin:msec}t %D %s %{remote}p %{X-Request-Id}i %m %U'" in target_sh
    assert f"readonly TARGET_ACCESS_LOG_FILE={accesslog.ACCESS_LOG}" in target_sh


def test_a_line_gives_begin_ms_service_in_microseconds_status_port_id_method_and_path():
    request = parse_line("1795516306655 419984 200 57344 4-0-1 GET /hello")
    assert request == AppRequest(begin_ms=1795516306655, service_us=419984, status=200, remote_port=57344,
                                 request_id="4-0-1", method="GET", path="/hello")
    assert request.service_ms == 419.984
    assert request.end_ms == 1795516306655 + 419.984


def test_a_request_without_the_header_has_no_id():
    assert parse_line("1795516304040 64340 200 57266 - GET /health").request_id is None


def test_a_line_cut_short_or_in_another_pattern_is_not_a_request(tmp_path):
    log = tmp_path / "tomcat-access.log"
    log.write_text("1795516306655 419984 200 57344 4-0-1 GET /hello\n"
                   "127.0.0.1 - - [24/Nov/2026:10:31:46 +0000] \"GET / HTTP/1.1\" 200 2\n"
                   "1795516306667 4149\n")
    read = read_access_log(log)
    assert [r.request_id for r in read.requests] == ["4-0-1"]
    assert read.unreadable == 2


def test_no_log_is_none_not_an_empty_log(tmp_path):
    assert read_access_log(tmp_path / "tomcat-access.log") is None
    assert app_figures(None) == {"app_reqs": None, "app_lat_med_ms": None, "app_lat_p99_ms": None,
                                 "app_lat_max_ms": None}


def _log(*lines):
    return accesslog.AccessLog([parse_line(line) for line in lines])


def test_the_load_is_what_began_after_k6_started_and_carries_an_id_when_any_does():
    log = _log("1000 500 200 1 - GET /health",      # the runner's health check
               "2001 400 200 2 - GET /health",      # setup()'s check
               "2002 400000 200 3 1-0-1 GET /hello",
               "2003 200000 200 4 2-0-1 GET /hello")
    assert [r.request_id for r in load_requests(log, 2000)] == ["1-0-1", "2-0-1"]


def test_without_ids_the_load_is_everything_after_k6_started():
    log = _log("1000 500 200 1 - GET /health", "2001 400 200 2 - GET /greeting", "2002 300 503 3 - GET /greeting")
    assert [r.begin_ms for r in load_requests(log, 2000)] == [2001, 2002]


def test_app_figures_are_k6_style_percentiles_of_the_processing_time_in_ms():
    requests = [parse_line(f"{2000 + i} {us} 200 {i} {i}-0-1 GET /hello")
                for i, us in enumerate([400000, 410000, 420000, 800000])]
    # k6's percentile: rank 0.5 x 3 = 1.5 -> between 410 and 420; 0.99 x 3 = 2.97 -> 420 + 0.97 x 380.
    assert app_figures(requests) == {"app_reqs": 4, "app_lat_med_ms": 415, "app_lat_p99_ms": 788.6,
                                     "app_lat_max_ms": 800}


def test_a_log_without_load_has_zero_requests_and_no_latency():
    assert app_figures([]) == {"app_reqs": 0, "app_lat_med_ms": None, "app_lat_p99_ms": None, "app_lat_max_ms": None}


# The line Spring Boot logs as Tomcat's engine starts (recorded from a Spring Boot 4.0.7 service;
# Spring Boot 2.7 logs the same line for its Tomcat 9).
ENGINE_LINE = "o.apache.catalina.core.StandardEngine    : Starting Servlet engine: [Apache Tomcat/{}]\n"


def test_the_unit_of_d_is_known_from_the_tomcat_the_target_logs():
    assert accesslog.service_unit_us(ENGINE_LINE.format("9.0.83")) == 1000
    assert accesslog.service_unit_us(ENGINE_LINE.format("10.0.27")) == 1000
    assert accesslog.service_unit_us(ENGINE_LINE.format("10.1.55")) == 1
    assert accesslog.service_unit_us(ENGINE_LINE.format("11.0.22")) == 1
    # A target that does not say is read as the suite's own (Tomcat 10.1).
    assert accesslog.service_unit_us("") == 1
    assert accesslog.service_unit_us(None) == 1


def _cell(cell_dir, tomcat, lines):
    """A cell directory whose target logged Tomcat's version and the access-log lines."""
    cell_dir.mkdir()
    (cell_dir / "target.log").write_text("  .   ____          _\n" + ENGINE_LINE.format(tomcat))
    (cell_dir / "tomcat-access.log").write_text("".join(line + "\n" for line in lines))
    (cell_dir / "phases.tsv").write_text("k6_start\t2000\n")
    return cell_dir


def test_tomcat_9_logs_milliseconds_and_its_app_figures_are_not_a_thousand_times_too_small(tmp_path):
    # The same 400 ms and 420 ms requests as Tomcat 9 (%D in ms) and Tomcat 11 (in us) log them.
    tomcat9 = _cell(tmp_path / "9", "9.0.83", ["2001 400 200 1 - GET /greeting", "2002 420 200 2 - GET /greeting"])
    tomcat11 = _cell(tmp_path / "11", "11.0.22", ["2001 400000 200 1 - GET /greeting",
                                                  "2002 420000 200 2 - GET /greeting"])
    for cell in (tomcat9, tomcat11):
        requests = accesslog.cell_load_requests(cell)
        assert [r.service_ms for r in requests] == [400, 420]
        assert app_figures(requests)["app_lat_max_ms"] == 420
