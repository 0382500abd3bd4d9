"""ltsuite.words: a cell's findings in words, from recorded cells' rows and settings; every
number in a sentence is one of the columns the finding names."""
import re
from pathlib import Path

from ltsuite import words
from ltsuite.cellfiles import read_cell_env, read_json

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _findings(name):
    cell = FIXTURES / name
    return words.cell_findings(read_json(cell / "row.json"), read_cell_env(cell / "cell.env"))


def test_users_who_could_not_get_in_the_capacity_the_server_held_and_what_to_raise():
    text = words.sentences(_findings("syn-cookies-1"))
    assert text == ("With max-connections 1, accept-count 1, 1 thread and 20 users, 20 of 20 requests (100 %) "
                    "failed: 20 timed out; the server held 1 + 1 + 1 = 3 connections, all it can (max-connections "
                    "+ listen backlog + 1); the 20 who timed out waited their timeout, REQUEST_TIMEOUT=10s; the "
                    "connection limit bound: to let more users in, raise max-connections or accept-count (and "
                    "somaxconn with it).")


def test_users_queued_behind_busy_threads_beside_the_applications_own_view():
    text = words.sentences(_findings("time-parts-queue"))
    assert text.startswith("With max-connections 2, accept-count 1, 2 threads and 8 users, none of 8 requests "
                           "failed; users waited p99 3033 ms while the application's own p99 was 1524 ms: all 2 "
                           "threads were busy for 8 users; the thread pool bound")


def test_a_cell_not_as_designed_says_so_first():
    findings = _findings("cut-off")
    assert findings[0].columns == ("as_designed", "design_notes")
    assert findings[0].text.startswith("Cell 01 did not run as designed: no request completed")


def test_after_a_first_finding_the_settings_continue_the_sentence():
    row = dict(read_json(FIXTURES / "syn-cookies-1" / "row.json"), as_designed=0, design_notes="a note")
    text = words.sentences(words.cell_findings(row, read_cell_env(FIXTURES / "syn-cookies-1" / "cell.env")))
    assert text.startswith("Cell 01_accept_count-1_tcp_syncookies-1 did not run as designed: a note; with "
                           "max-connections 1,")


def test_a_calm_cell_names_no_bound():
    findings = _findings("tiny-spike")
    assert [f.columns for f in findings] == [words.SETTINGS + ("http_reqs", "failed_reqs"), ("lat_p99_ms",)]


def test_every_number_comes_from_a_named_column_or_setting():
    for name in ("syn-cookies-1", "time-parts-queue"):
        cell = FIXTURES / name
        row, env = read_json(cell / "row.json"), read_cell_env(cell / "cell.env")
        for finding in words.cell_findings(row, env):
            values = {str(round(float(v))) for c in finding.columns
                      for v in [row.get(c, env.get(c))] if isinstance(v, (int, float)) or str(v).isdigit()}
            numbers = {t for t in finding.text.replace(",", " ").replace(":", " ").split() if t.isdigit()}
            # Besides the columns: the "+ 1" of the capacity and the "100 %" of a share.
            assert numbers <= values | {"1", "100"}, (finding, numbers - values)


def test_a_failed_cell_gives_its_error():
    assert words.sentences(words.cell_findings({"cell": "02", "status": "failed", "error": "target exited"}, {})) \
        == "Cell 02 failed: target exited."


def test_a_run_directory_gives_one_line_per_cell(tmp_path):
    cell = tmp_path / "cells" / "01"
    cell.mkdir(parents=True)
    (cell / "row.json").write_text((FIXTURES / "syn-cookies-1" / "row.json").read_text())
    (cell / "cell.env").write_text((FIXTURES / "syn-cookies-1" / "cell.env").read_text())
    lines = words.run_words(tmp_path)
    assert len(lines) == 1 and lines[0].startswith("01_accept_count-1_tcp_syncookies-1: With max-connections 1,")


def test_behind_nginx_the_full_accept_queue_shows_as_its_504s_not_as_connect_timeouts():
    findings = _findings("nginx-504")
    text = words.sentences(findings)
    assert ("nginx answered 13 requests, 8 with a 504 and 0 with a 502; 8 of its connections to the target timed "
            "out while connecting (PROXY_CONNECT_TIMEOUT 300ms), the others connected in under 1 ms") in text
    assert ("the full accept queue (8 overflows) showed up as nginx 504 (upstream timed out while connecting), "
            "not as a client connect timeout") in text
    moved = [f for f in findings if f.text.startswith("the full accept queue")][0]
    assert moved.columns == ("listen_overflows", "proxy_upstream_connect_timeouts", "fail_connect")


def test_without_a_proxy_no_sentence_names_nginx():
    for name in ("syn-cookies-1", "time-parts-queue"):
        assert "nginx" not in words.sentences(_findings(name))


def test_users_who_could_not_connect_are_not_said_to_have_moved_a_tier_up():
    cell = FIXTURES / "nginx-504"
    row = dict(read_json(cell / "row.json"), fail_connect=2)
    text = words.sentences(words.cell_findings(row, read_cell_env(cell / "cell.env")))
    assert "nginx answered 13 requests" in text
    assert "showed up as nginx 504" not in text


def test_the_answered_and_the_failed_users_wait_apart():
    # tests/fixtures/ramp-down-cut.matrix: 7 answered, 10 timed out at the script's own 4 s, 9 cut
    # off by its ramp-down while they waited. lat_p99_ms is the answered requests' alone.
    findings = _findings("ramp-down-cut")
    assert words.sentences(findings) == (
        "With max-connections 2, accept-count 1, 2 threads and 12 users, 19 of 26 requests (73 %) failed: 10 timed "
        "out, 9 were cut off while they waited, by the graceful stop or ramp-down; the server held 2 + 1 + 1 = 4 "
        "connections, all it can (max-connections + listen backlog + 1); the 7 answered waited p99 2943 ms while the "
        "application's own p99 was 1525 ms: all 2 threads were busy for 12 users; the 10 who timed out waited 4 s; "
        "the application never logged 6 of the 9 cut off (still connecting, queued unread, or unfinished when the "
        "target stopped) and had the others, which waited for their answers; the connection limit bound: to let "
        "more users in, raise max-connections or accept-count (and somaxconn with it).")
    by_text = {f.text.split(" waited")[0]: f.columns for f in findings}
    assert by_text["the 7 answered"][:3] == ("http_reqs", "failed_reqs", "lat_p99_ms")
    assert by_text["the 10 who timed out"] == ("fail_timeout", "failed_wait_med_ms", "failed_wait_p99_ms")


def test_failed_users_of_several_causes_wait_together_and_unlike_waits_say_p99():
    row = dict(read_json(FIXTURES / "ramp-down-cut" / "row.json"), fail_connect=3, failed_reqs=22,
               failed_wait_med_ms=3100.0)
    text = words.sentences(words.cell_findings(row, read_cell_env(FIXTURES / "ramp-down-cut" / "cell.env")))
    assert "the 13 who failed otherwise than cut off waited p99 4 s" in text
    assert "the 4 answered waited p99 2943 ms" in text


def test_every_figure_of_the_waits_is_a_named_columns_or_their_difference():
    for name, waits in (("ramp-down-cut", ["the 7 answered", "the 10 who timed out"]), ("cut-off-counted", [])):
        cell = FIXTURES / name
        row, env = read_json(cell / "row.json"), read_cell_env(cell / "cell.env")
        findings = words.cell_findings(row, env)
        # Whose wait each is: the answered apart from the failed.
        assert [f.text.split(" waited")[0] for f in findings if re.match(r"the [0-9]+ .* waited ", f.text)] == waits
        for finding in findings:
            named = [float(v) for c in finding.columns for v in [row.get(c, env.get(c))]
                     if isinstance(v, (int, float)) or str(v).isdigit()]
            values = ({f"{v:.0f}" for v in named} | {f"{v / 1000:.1f}".removesuffix(".0") for v in named}
                      | {f"{a - b:.0f}" for a in named for b in named}
                      | {f"{100 * a / b:.0f}" for a in named for b in named if b})
            number = r"(?<![A-Za-z_=0-9.])[0-9]+(?:\.[0-9]+)?"
            # A text column (design_notes) and the cell's name are quoted as they are.
            quoted = set(re.findall(number, " ".join([str(row.get("cell"))] + [
                row[c] for c in finding.columns if isinstance(row.get(c), str)])))
            numbers = set(re.findall(number, finding.text))
            # Besides the columns: the "+ 1" of the capacity.
            assert numbers <= values | quoted | {"1"}, (name, finding, numbers - values)
