"""One table of a failure's causes (scripts/ltsuite/causes.tsv): the Python side reads it, and k6's
side (scenarios/lib/causes.js, run here by node) gives the same cause for every status and error
code tried."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from ltsuite import causes as causes_module
from ltsuite.causes import JS_MODULE, TABLE, cause, failure_causes, javascript, rules

from conftest import ROOT

STATUSES = [0, 101, 199, 200, 204, 302, 399, 400, 404, 429, 499, 500, 503, 599, 600]
CODES = [0, 1000, 1050, 1100, 1200, 1209, 1210, 1211, 1212, 1219, 1220, 1221, 1299, 1300, 1310, 1311, 1399, 1400, 1404, 1503, 1599, 1600]


def test_the_causes_in_order():
    assert [r.cause for r in rules()] == ["answered", "no_fd", "connect", "reset", "tls", "timeout", "http_4xx",
                                          "http_5xx", "other", "interrupted"]
    assert failure_causes() == ["no_fd", "connect", "reset", "tls", "timeout", "http_4xx", "http_5xx", "other",
                                "interrupted"]


def test_interrupted_is_a_cause_no_k6_result_has():
    # k6 records nothing for a request its iteration's graceful stop cut, so no status, code or
    # message of k6's gives the cause: it is the table's last line, after "other", which matches
    # any result, and the row counts it (fail_interrupted).
    assert rules()[-1] == causes_module.Rule(causes_module.INTERRUPTED, None, None, "")
    errors = ["", "context canceled", "dial tcp 198.18.0.1:8080: operation was canceled", NO_FD]
    assert causes_module.INTERRUPTED not in {cause(s, c, e) for s in STATUSES for c in CODES for e in errors}


@pytest.mark.parametrize("status,code,expected", [
    (200, 0, "answered"), (399, 1220, "answered"), (0, 1210, "connect"), (0, 1219, "connect"), (0, 1220, "reset"),
    (0, 1050, "timeout"), (0, 1300, "tls"), (0, 1310, "tls"), (0, 1399, "tls"), (0, 1299, "other"),
    (404, 1404, "http_4xx"), (503, 1503, "http_5xx"), (0, 1000, "other"), (600, 0, "other")])
def test_a_requests_cause(status, code, expected):
    assert cause(status, code) == expected


#: k6 v1.8.1's messages for a dial that failed with EMFILE and with EADDRNOTAVAIL, both code 1213
#: (as k6.log recorded them: tests/integration/fd-wall.bats, scenarios.bats).
NO_FD = 'Get "http://198.18.0.1:8080/hello?delayMs=3000": dial tcp 198.18.0.1:8080: socket: too many open files'
NO_PORT = 'Get "http://198.18.0.1:8080/hello": dial tcp 198.18.0.2:0->198.18.0.1:8080: connect: cannot assign requested address'


@pytest.mark.parametrize("status,code,error,expected", [
    (0, 1213, NO_FD, "no_fd"), (0, 1213, NO_PORT, "connect"), (0, 1213, "", "connect"),
    (0, 1202, "read: unknown errno 24 on linux with message `too many open files`", "no_fd"),
    (0, 1050, "request timeout", "timeout"), (200, 1213, NO_FD, "answered")])
def test_a_client_out_of_file_descriptors_is_not_a_connect_failure(status, code, error, expected):
    assert cause(status, code, error) == expected


def run_causes_js(tmp_path, program, table=None):
    """Run a node ES module that imports scenarios/lib/causes.js (copied with its table module into
    a directory node reads as ES modules) and prints JSON. table: a causes-table.js of one's own
    (default: the committed one)."""
    if shutil.which("node") is None:
        pytest.fail("node is not installed (the suite's report tools need it: make tools)")
    (tmp_path / "package.json").write_text('{"type": "module"}\n')
    shutil.copy(ROOT / "scenarios" / "lib" / "causes.js", tmp_path / "causes.mjs")
    (tmp_path / "causes-table.js").write_text(table or (ROOT / "scenarios" / "lib" / "causes-table.js").read_text())
    (tmp_path / "main.mjs").write_text(program)
    run = subprocess.run(["node", str(tmp_path / "main.mjs")], capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def test_causes_js_gives_the_tables_cause_for_every_status_and_code(tmp_path):
    got = run_causes_js(tmp_path, f"""
import {{ failureCause }} from './causes.mjs';
const out = [];
for (const status of {json.dumps(STATUSES)}) for (const code of {json.dumps(CODES)})
  out.push([status, code, failureCause({{ status, error_code: code }}) ?? 'answered']);
console.log(JSON.stringify(out));
""")
    assert len(got) == len(STATUSES) * len(CODES)
    assert [row for row in got if row[2] != cause(row[0], row[1])] == []


def test_causes_js_tells_no_fd_by_the_message_as_the_table(tmp_path):
    errors = [NO_FD, NO_PORT, "", "socket: too many open files"]
    got = run_causes_js(tmp_path, f"""
import {{ failureCause }} from './causes.mjs';
const out = [];
for (const status of [0, 200, 503]) for (const code of [0, 1200, 1213, 1220, 1503]) for (const error of {json.dumps(errors)})
  out.push([status, code, error, failureCause({{ status, error_code: code, error }}) ?? 'answered']);
console.log(JSON.stringify(out));
""")
    assert len(got) == 3 * 5 * len(errors)
    assert [row for row in got if row[3] != cause(row[0], row[1], row[2])] == []
    assert [row[:3] for row in got if row[3] == "no_fd" and row[0] == 0] == [[0, 1200, NO_FD], [0, 1200, "socket: too many open files"],
                                                           [0, 1213, NO_FD], [0, 1213, "socket: too many open files"],
                                                           [0, 1220, NO_FD], [0, 1220, "socket: too many open files"]]


def test_causes_js_error_codes_by_counter_are_the_tables(tmp_path):
    got = run_causes_js(tmp_path, "import { causeCodes } from './causes.mjs'; console.log(JSON.stringify(causeCodes()));")
    codes = [1050] + list(range(1210, 1221)) + list(range(1300, 1400)) + list(range(1400, 1600))
    expected = {}
    for code in codes:
        status = code - 1000 if code >= 1400 else 0
        expected.setdefault(f"fail_{cause(status, code)}", []).append(code)
    assert got == expected
    # no_fd is told apart by its message, so no error code is its own (the row takes a script of
    # one's own's from k6's log); interrupted is no k6 result (the row counts it).
    assert sorted(got) == sorted(f"fail_{c}" for c in failure_causes() if c not in ("other", "no_fd", "interrupted"))


def test_the_committed_js_table_is_made_from_causes_tsv():
    assert JS_MODULE.read_text() == javascript(), \
        "scenarios/lib/causes-table.js is not causes.tsv's: PYTHONPATH=scripts python3 -m ltsuite.causes js " \
        ">scenarios/lib/causes-table.js"


def test_a_row_added_to_the_table_reaches_both_languages(tmp_path):
    # A new cause in a copy of the table, before "other": Python's rules and k6's side (made from
    # the copy) both count a 1230 as it.
    table = tmp_path / "causes.tsv"
    text = TABLE.read_text()
    table.write_text(text.replace("\nother\t", "\nproto\t\t1230-1239\t\nother\t"))
    rules.cache_clear()
    try:
        added = rules(table)
        assert [r.cause for r in added][-3:] == ["proto", "other", "interrupted"]
        assert next(r.cause for r in added if r.matches(0, 1231)) == "proto"
    finally:
        rules.cache_clear()
    js_dir = tmp_path / "js"
    js_dir.mkdir()
    got = run_causes_js(js_dir, """
import { failureCause, FAILURE_CAUSES, causeCodes } from './causes.mjs';
console.log(JSON.stringify({ cause: failureCause({ status: 0, error_code: 1231 }), causes: FAILURE_CAUSES,
  codes: causeCodes().fail_proto }));
""", table=javascript(table))
    assert got == {"cause": "proto", "causes": ["no_fd", "connect", "reset", "tls", "timeout", "http_4xx", "http_5xx", "proto",
                                              "other", "interrupted"], "codes": list(range(1230, 1240))}
    # The command line writes the same module.
    run = subprocess.run([sys.executable, "-m", "ltsuite.causes", "js", str(table)], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")})
    assert run.stdout == javascript(table)
    assert causes_module.main(["nonsense"]) == 2
