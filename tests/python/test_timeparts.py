"""Each request split (ltsuite.timeparts): k6's samples joined with Tomcat's access log on the
request id, the parts and their tolerance, the requests the application never saw, the waves'
and the SYN schedule's predictions; over made-up samples with known answers and over cells
recorded by real runs of tests/fixtures/time-parts*.matrix (tests/python/fixtures/time-parts-*)."""
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ltsuite import accesslog, timeparts
from ltsuite.accesslog import parse_line
from ltsuite.row import Cell, build_row

FIXTURES = Path(__file__).parent / "fixtures"


def k6_lines(end_ms, rid, status=200, error_code=None, traffic="load", **values):
    """The JSON lines k6 writes for one request (its samples share the end time and metadata)."""
    stamp = datetime.fromtimestamp(end_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"
    tags = {"status": str(status), "traffic": traffic, "scenario": "burst"}
    if error_code is not None:
        tags["error_code"] = str(error_code)
    out = []
    for metric in ("duration", "blocked", "connecting", "tls_handshaking", "sending", "waiting", "receiving"):
        data = {"time": stamp, "value": values.get(metric, 0.0), "tags": tags}
        if rid is not None:
            data["metadata"] = {"rid": rid}
        out.append(json.dumps({"metric": f"http_req_{metric}", "type": "Point", "data": data},
                              separators=(",", ":")) + "\n")
    return out


# One request: k6 asked for a connection at 10,000 ms, connected in 2 ms (blocked 3), sent in
# 1 ms (it left k6 at 10,004), waited 900 ms and received in 1 ms: it ended at 10,905.
# Tomcat began it at 10,300 and spent 600 ms: queued 296, service 600.
ONE = dict(duration=902.0, blocked=3.0, connecting=2.0, sending=1.0, waiting=900.0, receiving=1.0)


def test_one_request_s_parts_add_up_to_blocked_plus_duration():
    k6 = timeparts.k6_requests(k6_lines(10_905, "1-0-1", **ONE))
    assert [(r.request_id, r.end_ms, r.left_ms, r.start_ms) for r in k6] == [("1-0-1", 10_905, 10_004, 10_000)]
    parts = timeparts.split(k6[0], parse_line("10300 600000 200 5000 1-0-1 GET /hello"))
    assert (parts.connect, parts.queued, parts.service) == (2.0, 296.0, 600.0)
    assert parts.rest == pytest.approx(905 - 2 - 296 - 600)
    assert parts.connect + parts.queued + parts.service + parts.rest == pytest.approx(ONE["blocked"] + ONE["duration"])
    assert parts.tomcat_after_k6_end == pytest.approx(10_900 - 10_905)
    assert parts.off_by() == 0


# The same request over HTTPS: of its 8 ms blocked, 2 ms connecting and 5 ms the TLS handshake
# (k6's blocked holds both: its tracer's GetConn to GotConn), so it left k6 at 10,009.
TLS_ONE = dict(ONE, blocked=8.0, tls_handshaking=5.0)


def test_the_tls_handshake_is_a_part_of_its_own_and_the_parts_still_add_up():
    k6 = timeparts.k6_requests(k6_lines(10_910, "1-0-1", **TLS_ONE))
    assert k6[0].tls_handshaking == 5.0
    parts = timeparts.split(k6[0], parse_line("10300 600000 200 5000 1-0-1 GET /hello"))
    assert (parts.connect, parts.handshake, parts.queued, parts.service) == (2.0, 5.0, 291.0, 600.0)
    assert parts.rest == pytest.approx(910 - 2 - 5 - 291 - 600)
    assert (parts.connect + parts.handshake + parts.queued + parts.service + parts.rest
            == pytest.approx(TLS_ONE["blocked"] + TLS_ONE["duration"]))


def test_the_handshake_columns_are_measured_on_https_and_empty_on_plain_http():
    lines = (k6_lines(10_910, "1-0-1", **TLS_ONE)
             + k6_lines(11_910, "1-0-2", **dict(ONE, blocked=0.01, connecting=0.0)))
    app = [parse_line("10300 600000 200 5000 1-0-1 GET /hello"), parse_line("11005 900000 200 5000 1-0-2 GET /hello")]
    joined = timeparts.join(timeparts.k6_requests(lines), app)
    https = timeparts.figures(joined, tls=True)
    assert (https["t_handshake_med_ms"], https["t_handshake_p99_ms"]) == (2.5, 4.95)
    plain = timeparts.figures(joined, tls=False)
    assert (plain["t_handshake_med_ms"], plain["t_handshake_p99_ms"]) == (None, None)
    assert plain["t_connect_med_ms"] == https["t_connect_med_ms"]


def test_new_connections_and_handshakes_a_second_count_only_dialed_connections():
    lines = (k6_lines(10_910, "1-0-1", **TLS_ONE)
             + k6_lines(11_910, "1-0-2", **dict(ONE, blocked=0.01, connecting=0.0))
             + k6_lines(13_000, "2-0-1", status=0, error_code=1310, blocked=0.0, connecting=0.0))
    k6 = timeparts.k6_requests(lines)
    assert timeparts.connection_figures(k6, True, 2.0) == {
        "new_conns": 1, "new_conns_per_s": 0.5, "tls_handshakes": 1, "tls_handshakes_per_s": 0.5,
        "tls_handshakes_end_ms": 8.0}
    assert timeparts.connection_figures(k6, False, 2.0) == {
        "new_conns": 1, "new_conns_per_s": 0.5, "tls_handshakes": None, "tls_handshakes_per_s": None,
        "tls_handshakes_end_ms": None}
    assert timeparts.connection_figures(k6, True, None)["tls_handshakes_per_s"] is None
    assert set(timeparts.connection_figures(None, True, 2.0).values()) == {None}


def test_the_last_handshake_ends_at_its_start_plus_blocked_after_the_first_request_s_start():
    # Started at 10,000 (handshake ended at 10,008), at 10,100 (blocked 150: ended at 10,250)
    # and a plain reused request at 10,050 that made no handshake.
    lines = (k6_lines(10_910, "1-0-1", **TLS_ONE)
             + k6_lines(10_050 + 0.01 + 902, "1-0-2", **dict(ONE, blocked=0.01, connecting=0.0))
             + k6_lines(10_100 + 150 + 902, "2-0-1", **dict(ONE, blocked=150.0, tls_handshaking=140.0)))
    k6 = timeparts.k6_requests(lines)
    assert timeparts.connection_figures(k6, True, 1.0)["tls_handshakes_end_ms"] == 250.0
    assert timeparts.connection_figures(k6[:2], True, 1.0)["tls_handshakes_end_ms"] == 8.0


def test_tomcat_starting_before_the_request_left_k6_is_out_of_order():
    k6 = timeparts.k6_requests(k6_lines(10_905, "1-0-1", **ONE))
    parts = timeparts.split(k6[0], parse_line("9990 600000 200 5000 1-0-1 GET /hello"))
    assert parts.queued == -14.0
    assert parts.off_by() == 14.0 > timeparts.TOLERANCE_MS


def test_setup_traffic_and_cut_lines_are_not_requests():
    lines = k6_lines(5_000, None, traffic="setup", **ONE) + k6_lines(10_905, "1-0-1", **ONE)
    lines[-1] = lines[-1][:40]
    k6 = timeparts.k6_requests(lines)
    assert [(r.request_id, r.receiving) for r in k6] == [("1-0-1", 0.0)]


def test_two_requests_ending_at_one_instant_stay_two():
    lines = k6_lines(10_905, "1-0-1", **ONE) + k6_lines(10_905, "2-0-1", **ONE)
    assert [r.request_id for r in timeparts.k6_requests(lines)] == ["1-0-1", "2-0-1"]


def test_requests_the_application_never_saw_are_split_by_cause():
    lines = (k6_lines(10_905, "1-0-1", **ONE)
             + k6_lines(13_000, "2-0-1", status=0, error_code=1211, blocked=3000.0, connecting=0.0)
             + k6_lines(20_000, "3-0-1", status=0, error_code=1050, duration=10_000.0, blocked=1.0))
    joined = timeparts.join(timeparts.k6_requests(lines), [parse_line("10300 600000 200 5000 1-0-1 GET /hello")])
    assert (len(joined.parts), joined.connect_failed, joined.never_read) == (1, 1, 1)
    figures = timeparts.figures(joined)
    assert {k: figures[k] for k in ("decomposed_reqs", "reqs_never_seen_by_app_connect_failed",
                                    "reqs_never_seen_by_app_never_read", "t_queued_med_ms", "t_service_p99_ms",
                                    "parts_out_of_order")} == {
        "decomposed_reqs": 1, "reqs_never_seen_by_app_connect_failed": 1, "reqs_never_seen_by_app_never_read": 1,
        "t_queued_med_ms": 296, "t_service_p99_ms": 600, "parts_out_of_order": 0}


def test_an_id_tomcat_logged_twice_is_left_out():
    k6 = timeparts.k6_requests(k6_lines(10_905, "1-0-1", **ONE))
    twice = [parse_line("10300 600000 200 5000 1-0-1 GET /hello"), parse_line("10301 600000 200 5001 1-0-1 GET /hello")]
    joined = timeparts.join(k6, twice)
    assert (joined.parts, joined.never_read) == ([], 0)


def test_without_ids_nothing_is_joined_and_the_parts_are_empty():
    joined = timeparts.join(timeparts.k6_requests(k6_lines(10_905, None, **ONE)),
                            [parse_line("10300 600000 200 5000 - GET /hello")])
    assert joined.ids is False
    assert set(timeparts.figures(joined).values()) == {None}


def test_the_waves_8_users_on_2_threads_wait_0_400_800_1200():
    predicted = timeparts.simulate(users=8, threads=2, max_connections=8192, backlog=100, service_ms=400,
                                   syn_times_s=[0, 1, 2, 3])
    assert predicted.queued == [0, 0, 400, 400, 800, 800, 1200, 1200]
    assert predicted.connect == [0] * 8


def test_users_past_a_full_queue_connect_at_the_syn_schedule_once_room_frees():
    # Capacity 2 + 1 + 1 = 4; answers at 1.3 s free 2 connections, so the SYNs sent again at 2 s
    # get in and wait for the threads (busy until 2.6 s); the last two get in at 3 s.
    predicted = timeparts.simulate(users=8, threads=2, max_connections=2, backlog=1, service_ms=1300,
                                   syn_times_s=[0, 1, 2, 3, 4, 5, 7])
    assert predicted.connect == [0, 0, 0, 0, 2000, 2000, 3000, 3000]
    assert predicted.queued == [0, 0, 1300, 1300, 600, 600, 900, 900]


def _burst_of_eight(request_timeout: str) -> tuple[dict, dict]:
    """A burst of 8 users of one request each, 2 threads of 400 ms, queues that hold them all."""
    env = {"SCENARIO": "burst", "REQUESTS_PER_VU": "1", "VUS": "8", "TOMCAT_MAX_THREADS": "2",
           "TOMCAT_MAX_CONNECTIONS": "8192", "TOMCAT_ACCEPT_COUNT": "100", "DELAY_MS": "400",
           "REQUEST_TIMEOUT": request_timeout}
    sysctls = {"server": {"net.core.somaxconn": "4096"},
               "client": {"net.ipv4.tcp_syn_retries": "6", "net.ipv4.tcp_syn_linear_timeouts": "4"}}
    return env, sysctls


def test_predictions_apply_to_a_burst_of_one_request_per_user_only():
    env, sysctls = _burst_of_eight(request_timeout="5s")
    assert timeparts.predictions(env, sysctls) == {"predicted_t_queued_p99_ms": 1200, "predicted_t_connect_p99_ms": 0}
    assert set(timeparts.predictions({**env, "SCENARIO": "spike"}, sysctls).values()) == {None}
    assert set(timeparts.predictions({**env, "REQUESTS_PER_VU": "20"}, sysctls).values()) == {None}


def test_users_answered_after_their_timeout_are_not_in_the_prediction():
    # 8 users, 2 threads of 400 ms: answers at 400, 800, 1200, 1600 ms; a 1 s timeout leaves
    # the first two waves, the only requests whose parts are measured.
    env, sysctls = _burst_of_eight(request_timeout="1s")
    assert timeparts.predictions(env, sysctls) == {"predicted_t_queued_p99_ms": 400, "predicted_t_connect_p99_ms": 0}


def test_a_round_trip_time_lengthens_every_connect_by_it():
    # 40 ms between users and server: connects take 40 ms more; with a 1 s timeout the second
    # wave (answered at 800 ms + two round trips) is still in, the third not.
    env, sysctls = _burst_of_eight(request_timeout="1s")
    assert timeparts.predictions({**env, "NET_RTT_MS": "40"}, sysctls) == {
        "predicted_t_queued_p99_ms": 400, "predicted_t_connect_p99_ms": 40}
    assert timeparts.predictions({**env, "NET_RTT_MS": "150"}, sysctls) == {
        "predicted_t_queued_p99_ms": 0, "predicted_t_connect_p99_ms": 150}


def test_the_round_trip_predicted_is_the_one_the_delayer_applied() -> None:
    # 40 ms asked, 47.5 applied (a delayer slower than asked): every connect is 47.5 ms longer.
    env, sysctls = _burst_of_eight(request_timeout="1s")
    assert timeparts.predictions({**env, "NET_RTT_MS": "40"}, sysctls, 47.5) == {
        "predicted_t_queued_p99_ms": 400, "predicted_t_connect_p99_ms": 47.5}


def test_users_that_did_not_arrive_at_once_are_not_checked_against_the_waves():
    env = {"DELAY_MS": "400", "START_SPREAD_LIMIT_MS": "1000"}
    figures = {"t_queued_p99_ms": 1500, "t_connect_p99_ms": 2000, "t_service_med_ms": 400}
    predicted = {"predicted_t_queued_p99_ms": 1200, "predicted_t_connect_p99_ms": 0}
    row = {"prediction_check": "match", "prediction_notes": None, "first_request_spread_ms": 7770}
    assert timeparts.verdict(env, row, figures, predicted) == {}
    assert timeparts.verdict(env, {**row, "first_request_spread_ms": 900}, figures, predicted)["prediction_check"] \
        == "mismatch"


def test_a_part_off_its_prediction_makes_the_check_a_mismatch_and_says_why():
    env = {"DELAY_MS": "400"}
    figures = {"t_queued_p99_ms": 1500, "t_connect_p99_ms": 1, "t_service_med_ms": 520}
    predicted = {"predicted_t_queued_p99_ms": 1200, "predicted_t_connect_p99_ms": 0}
    out = timeparts.verdict(env, {"prediction_check": "match", "prediction_notes": None}, figures, predicted)
    assert out == {"prediction_check": "mismatch", "prediction_notes":
                   "t_queued_p99_ms 1500 where 1200 was predicted (within 10 % of the step and 50 ms): the service "
                   "took 520 ms (t_service_med_ms), not DELAY_MS=400"}
    near = timeparts.verdict(env, {"prediction_check": None}, {**figures, "t_queued_p99_ms": 1265}, predicted)
    assert near == {"prediction_check": "match"}
    assert timeparts.verdict(env, {"prediction_check": "match"}, figures, {}) == {}


# ---- Cells recorded by real runs ------------------------------------------------------------------

RECORDED = sorted(p.name for p in FIXTURES.glob("time-parts-*") if (p / accesslog.ACCESS_LOG).is_file())


def recorded_row(name):
    return json.loads((FIXTURES / name / "row.json").read_text())


@pytest.mark.parametrize("name", RECORDED)
def test_every_joined_request_s_parts_add_up_within_the_tolerance(name):
    app = accesslog.cell_load_requests(FIXTURES / name)
    joined = timeparts.join(timeparts.cell_k6_requests(FIXTURES / name), app)
    assert len(joined.parts) == recorded_row(name)["decomposed_reqs"] > 0
    for part in joined.parts:
        assert part.connect + part.queued + part.service + part.rest == pytest.approx(part.whole, abs=1e-6)
        assert part.queued >= -timeparts.TOLERANCE_MS, part
        assert part.tomcat_after_k6_end <= timeparts.TOLERANCE_MS, part
        assert part.rest >= -timeparts.TOLERANCE_MS, part


def test_the_recorded_full_queue_shows_the_syn_schedule_and_its_prediction():
    # tests/fixtures/time-parts-queue.matrix as it first ran (DELAY_MS=1500): capacity 4, the other
    # four users' SYNs dropped until answers freed room, at the 2 s and 3 s retransmits.
    cell = FIXTURES / "time-parts-queue"
    drawn = timeparts.bars(cell, 100)
    assert sorted(round(b[1] / 1000) for b in drawn["bars"]) == [0, 0, 0, 0, 2, 2, 3, 3]
    row = recorded_row("time-parts-queue")
    assert [row["predicted_t_connect_p99_ms"], row["predicted_t_queued_p99_ms"], row["prediction_check"]] == \
        [3000, 1500, "match"]
    assert row["app_reqs"] == row["decomposed_reqs"] == row["http_reqs"] == 8
    assert drawn["app_ms"] == sorted(drawn["app_ms"]) and len(drawn["app_ms"]) == len(drawn["k6_ms"]) == 8


def test_a_few_bars_of_many_are_every_nth_in_order_of_start():
    drawn = timeparts.bars(FIXTURES / "time-parts-queue", 3)
    assert (drawn["count"], drawn["stride"], len(drawn["bars"])) == (8, 3, 3)
    assert [b[0] for b in drawn["bars"]] == sorted(b[0] for b in drawn["bars"])


def test_the_parts_reach_influxdb_as_one_point_per_second_of_start():
    lines = timeparts.influx_lines(FIXTURES / "time-parts-queue", "r 1", "01", "burst")
    assert len(lines) == 1
    head, fields, stamp = lines[0].split(" ")[-3:]
    assert lines[0].startswith("ltsuite_time_parts,run_id=r\\ 1,cell=01,scenario=burst ")
    assert [f.split("=")[0] for f in fields.split(",")] == ["connect_ms", "queued_ms", "service_ms", "rest_ms",
                                                            "requests"]
    assert fields.endswith(",requests=8i") and stamp.endswith("000000000")


def test_the_recorded_waves_wait_0_400_800_1200_ms_and_the_service_is_delay_ms():
    # tests/fixtures/time-parts.matrix: 8 users at once on 2 threads, DELAY_MS=400.
    joined = timeparts.join(timeparts.cell_k6_requests(FIXTURES / "time-parts-waves"),
                            accesslog.cell_load_requests(FIXTURES / "time-parts-waves"))
    assert sorted(round(p.queued / 400) for p in joined.parts) == [0, 0, 1, 1, 2, 2, 3, 3]
    row = recorded_row("time-parts-waves")
    assert abs(row["t_service_med_ms"] - 400) <= 20 and abs(row["t_queued_p99_ms"] - 1200) <= 90
    assert row["t_connect_p99_ms"] < 20
    assert [row["predicted_t_queued_p99_ms"], row["prediction_check"]] == [1200, "match"]


def test_syns_dropped_while_the_accept_queue_had_room_explain_a_mismatch():
    row = {"prediction_check": None, "listen_drops": 54, "listen_overflows": 39}
    out = timeparts.verdict({"DELAY_MS": "1300"}, row, {"t_connect_p99_ms": 3065.9, "t_service_med_ms": 1304.8},
                            {"predicted_t_connect_p99_ms": 2000})
    assert out["prediction_check"] == "mismatch"
    assert out["prediction_notes"].startswith("t_connect_p99_ms 3065.9 where 2000 was predicted (within 10 % of the "
                                              "step and 50 ms): 15 SYNs were dropped while the accept queue had room "
                                              "(ListenDrops 54, ListenOverflows 39)")


@pytest.mark.parametrize("name", RECORDED)
def test_k6_s_lines_read_by_position_are_what_a_json_parser_reads(name):
    from ltsuite.latency import read_lines
    lines = [line for line in read_lines(FIXTURES / name / "k6-samples.json.gz") if line.startswith(timeparts._PREFIXES)]
    assert lines
    for line in lines:
        sample = json.loads(line)
        data = sample["data"]
        tags = {k: v for k, v in data["tags"].items() if k in ("status", "error_code", "traffic")}
        assert timeparts._sample(line) == (sample["metric"], data["time"], data["value"], tags,
                                           (data.get("metadata") or {}).get("rid"))


def test_a_line_in_another_layout_is_read_by_the_json_parser_and_a_cut_one_not_at_all():
    other = ('{"type":"Point","metric":"http_req_waiting","data":{"value":5,"time":"2026-11-24T10:00:00Z",'
             '"metadata":{"trace":"x","rid":"1-0-1"},"tags":{"status":"200"}}}')
    assert timeparts._sample('{"metric":"http_req_waiting","type":"Point","data":{"time":"2026-11-24T10:00:00Z",'
                             '"value":5,"tags":{"status":"200"},"metadata":{"trace":"x","rid":"1-0-1"}}}') == \
        ("http_req_waiting", "2026-11-24T10:00:00Z", 5.0, {"status": "200"}, "1-0-1")
    assert timeparts._sample(other) == ("http_req_waiting", "2026-11-24T10:00:00Z", 5.0, {"status": "200"}, "1-0-1")
    assert timeparts._sample(k6_lines(10_905, "1-0-1", **ONE)[0][:-10]) is None


def test_with_virtual_threads_the_waves_are_max_connections_wide():
    # 8 users of 400 ms, 2 threads: waves at 0, 400, 800, 1200 ms of queueing; on virtual threads
    # every connection is served at once (max-connections 8192), and with max-connections 4
    # two waves of 4 remain.
    env, sysctls = _burst_of_eight(request_timeout="5s")
    virtual = {**env, "TOMCAT_VIRTUAL_THREADS": "1"}
    assert timeparts.predictions(virtual, sysctls)["predicted_t_queued_p99_ms"] == 0
    assert timeparts.predictions({**virtual, "TOMCAT_MAX_CONNECTIONS": "4"}, sysctls)["predicted_t_queued_p99_ms"] == 400
    assert timeparts.predictions({**env, "TOMCAT_VIRTUAL_THREADS": "0"}, sysctls)["predicted_t_queued_p99_ms"] == 1200


def test_loss_lengthens_the_connects_of_the_users_whose_handshake_was_lost():
    """NET_LOSS 0.01: an attempt fails when its SYN or SYN-ACK is lost (1.99 %), so more than 1 %
    of the users connect a SYN retransmission (1 s) later: the p99 connect is 1 s (+ the RTT);
    at 0.001 (0.2 %) the p99 user got through at once. Without loss, nothing changes."""
    env, sysctls = _burst_of_eight(request_timeout="5s")
    assert timeparts.predictions({**env, "NET_RTT_MS": "40", "NET_LOSS": "0.01"}, sysctls)[
        "predicted_t_connect_p99_ms"] == 1040
    assert timeparts.predictions({**env, "NET_RTT_MS": "40", "NET_LOSS": "0.001"}, sysctls)[
        "predicted_t_connect_p99_ms"] == 40
    assert timeparts.predictions({**env, "NET_LOSS": "0"}, sysctls) == timeparts.predictions(env, sysctls)
    shares = timeparts.lost_handshakes(0.5, [0, 1, 3])
    assert [extra for extra, _ in shares] == [0, 1000, 3000]
    assert abs(shares[0][1] - 0.25) < 1e-9 and abs(shares[1][1] - 0.1875) < 1e-9


def _recorded(name):
    """A recorded cell's k6 requests, the requests its scenario counted as sent, and its access log."""
    cell = FIXTURES / name
    sent = timeparts.SentIds()
    return timeparts.cell_k6_requests(cell, sent), sent, accesslog.cell_load_requests(cell)


def test_failed_requests_wait_their_own_time_where_k6_timed_them_zero():
    # tests/fixtures/ramp-down-cut.matrix: the script's own timeout is 4 s (params.timeout, in no
    # option). k6 gives a request that timed out while it was still connecting no times at all;
    # from its sent mark to its failure it waited the whole timeout.
    k6, sent, _ = _recorded("ramp-down-cut")
    timed_out = [r for r in k6 if r.error_code == 1050]
    assert timed_out and any(r.whole == 0 for r in timed_out)
    waits = [timeparts.failed_wait(r, sent) for r in timed_out]
    assert all(4000 <= w < 4050 for w in waits), waits
    got = timeparts.failed_wait_figures(k6, sent)
    assert 4000 <= got["failed_wait_med_ms"] <= got["failed_wait_p99_ms"] < 4050
    # Without the sent marks only k6's own times remain, and a request k6 did not time is left
    # out, not counted as 0.
    assert all(timeparts.failed_wait(r, None) is None for r in timed_out if r.whole == 0)
    assert timeparts.failed_wait_figures([], sent) == {"failed_wait_med_ms": None, "failed_wait_p99_ms": None}


def test_requests_cut_off_while_they_waited_are_looked_up_in_the_access_log_by_their_sent_id():
    k6, sent, app = _recorded("ramp-down-cut")
    cut = set(sent.ids) - {r.request_id for r in k6}
    unseen = cut - {a.request_id for a in app}
    row = json.loads((FIXTURES / "ramp-down-cut" / "row.json").read_text())
    assert len(cut) == row["fail_interrupted"]
    # Some were still connecting (never logged), the application had the others.
    assert 0 < len(unseen) < len(cut)
    assert timeparts.join(k6, app, sent).interrupted_never_seen == len(unseen)
    assert timeparts.join(k6, app).interrupted_never_seen is None


def test_a_cell_whose_every_request_was_cut_off_is_still_joined_by_its_sent_ids():
    # tests/fixtures/design-cut.matrix: k6 gave none of the 11 requests a result, the application
    # logged all 11 (the users were cut while their 30 s requests were being served).
    k6, sent, app = _recorded("cut-off-counted")
    assert k6 == [] and len(sent.ids) == 11
    got = timeparts.figures(timeparts.join(k6, app, sent))
    assert [got["reqs_never_seen_by_app_interrupted"], got["decomposed_reqs"]] == [0, 0]
