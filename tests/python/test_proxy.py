"""nginx's config for a cell and the proxy's view (proxy_* columns) from its recorded log lines."""
from __future__ import annotations

from pathlib import Path

import pytest

from ltsuite import proxy
from ltsuite.cellfiles import read_phases

# Recorded from nginx 1.22.1 (Debian) with the config below, target port closed (refused).
REFUSED_ACCESS = [
    "1795734767.408\t502\t502\t0.001\t-\t0.000",
    "1795734767.420\t502\t502\t0.000\t-\t0.000",
]
REFUSED_ERROR = [
    '2026/11/26 23:12:47 [error] 10779#10779: *1 connect() failed (111: Connection refused) while connecting '
    'to upstream, client: 127.0.0.1, server: , request: "GET /x HTTP/1.1", upstream: "http://127.0.0.1:1/x", '
    'host: "127.0.0.1:18090"',
]
# Recorded from a cell of tests/integration/proxy.bats (PROXY_CONNECT_TIMEOUT=300ms, a full accept queue).
TIMEOUT_ERROR = (
    '2026/11/26 23:23:50 [error] 9519#9519: *8 upstream timed out (110: Connection timed out) while connecting '
    'to upstream, client: 198.18.0.2, server: , request: "GET /hello?delayMs=1500 HTTP/1.1", '
    'upstream: "http://198.18.0.1:8080/hello?delayMs=1500", host: "198.18.0.1:8090"')
TIMEOUT_ACCESS = "1795735430.010\t504\t504\t0.301\t-\t0.301"
OK_ACCESS = [f"1795734767.5{i:02d}\t200\t200\t0.0{i:02d}\t0.00{i % 10}\t0.0{i:02d}" for i in range(1, 100)]

ENV = {"SERVER_ADDR": "10.200.0.1", "SERVER_PORT": "8080", "PROXY_PORT": "8090",
       "PROXY_UPSTREAM_KEEPALIVE": "0", "PROXY_CLIENT_KEEPALIVE_TIMEOUT": "10s", "PROXY_CONNECT_TIMEOUT": "1m30s"}


def test_durations_are_whole_milliseconds() -> None:
    assert proxy.duration_ms("10s") == 10000
    assert proxy.duration_ms("0s") == 0
    assert proxy.duration_ms("1m30s") == 90000
    assert proxy.duration_ms("250ms") == 250
    with pytest.raises(ValueError):
        proxy.duration_ms("10")


def test_config_without_upstream_keepalive_leaves_http10(tmp_path: Path) -> None:
    conf = proxy.render_config(ENV, tmp_path)
    assert "listen 10.200.0.1:8090 backlog=511;" in conf
    assert "  worker_connections 4096;\n" in conf
    assert "proxy_read_timeout 60000ms;" in conf
    assert "server 10.200.0.1:8080 max_fails=0;" in conf
    assert "keepalive_timeout 10000ms;" in conf
    assert "proxy_connect_timeout 90000ms;" in conf
    assert "keepalive " not in conf.replace("keepalive_timeout", "")
    assert "proxy_http_version" not in conf
    assert f"pid \"{tmp_path.resolve() / 'nginx.pid'}\";" in conf
    assert f"access_log \"{tmp_path.resolve() / 'nginx-access.log'}\" ltsuite;" in conf


def test_config_with_upstream_keepalive_speaks_http11(tmp_path: Path) -> None:
    conf = proxy.render_config({**ENV, "PROXY_UPSTREAM_KEEPALIVE": "8", "PROXY_CLIENT_KEEPALIVE_TIMEOUT": "0s"},
                               tmp_path)
    assert "    keepalive 8;\n" in conf
    assert "proxy_http_version 1.1;" in conf
    assert 'proxy_set_header Connection "";' in conf
    assert "keepalive_timeout 0ms;" in conf


def test_config_takes_read_timeout_backlog_and_worker_connections(tmp_path: Path) -> None:
    conf = proxy.render_config({**ENV, "PROXY_READ_TIMEOUT": "2500ms", "PROXY_BACKLOG": "16",
                                "PROXY_WORKER_CONNECTIONS": "64"}, tmp_path)
    assert "listen 10.200.0.1:8090 backlog=16;" in conf
    assert "  worker_connections 64;\n" in conf
    assert "proxy_read_timeout 2500ms;" in conf


def test_refused_connections_are_502_and_connect_errors() -> None:
    cols = proxy.columns(REFUSED_ACCESS, REFUSED_ERROR)
    assert cols["proxy_reqs"] == 2
    assert cols["proxy_502"] == 2
    assert cols["proxy_504"] == 0
    assert cols["proxy_upstream_connect_errors"] == 1
    assert cols["proxy_upstream_connect_timeouts"] == 0
    # No request connected: no connect time to take a percentile of.
    assert cols["proxy_upstream_connect_p99_ms"] is None
    assert cols["proxy_request_p99_ms"] == pytest.approx(1.0, abs=0.02)


def test_connect_timeouts_are_counted_apart() -> None:
    cols = proxy.columns([TIMEOUT_ACCESS], [TIMEOUT_ERROR, "unrelated line"])
    assert cols["proxy_504"] == 1
    assert cols["proxy_upstream_connect_timeouts"] == 1
    assert cols["proxy_upstream_connect_errors"] == 0


def test_percentiles_over_the_answered_requests() -> None:
    cols = proxy.columns(OK_ACCESS + ["garbage", "1\t200\tx\ty"], [])
    assert cols["proxy_reqs"] == 99
    assert cols["proxy_502"] == 0
    assert cols["proxy_request_p99_ms"] == pytest.approx(99.0, abs=1.0)
    assert cols["proxy_upstream_connect_p99_ms"] == pytest.approx(9.0, abs=0.01)


def test_upstream_fields_take_the_last_try() -> None:
    req = proxy.parse_access_line("1.0\t200\t502, 200\t0.010\t0.001, 0.002\t0.003, 0.008")
    assert req == proxy.ProxyRequest(200, 200, 10.0, 2.0, 8.0)


def test_the_warm_up_s_requests_are_not_the_proxy_s_figures(tmp_path: Path) -> None:
    """nginx logs the warm-up's requests too (WARMUP: they pass nginx, as users do); those that
    ended between the marks warmup_start and warmup_end are not the load's. nginx's own check
    before them stays, as in a cell without a warm-up."""
    check = "1795734760.100\t200\t200\t0.002\t0.000\t0.002"
    warm = [f"1795734761.{i:03d}\t200\t200\t0.030\t0.000\t0.030" for i in range(100, 400)]
    load = OK_ACCESS[:5]  # 1795734767.5xx
    (tmp_path / "nginx-access.log").write_text("\n".join([check, *warm, *load]) + "\n")
    assert proxy.row_columns(tmp_path)["proxy_reqs"] == 306
    (tmp_path / "phases.tsv").write_text("warmup_start\t1795734761000\nwarmup_end\t1795734762000\n"
                                         "k6_start\t1795734762010\n")
    cols = proxy.row_columns(tmp_path, read_phases(tmp_path / "phases.tsv"))
    assert cols["proxy_reqs"] == 6
    assert cols["proxy_request_p99_ms"] == pytest.approx(5.0, abs=0.1)


def test_no_proxy_no_columns(tmp_path: Path) -> None:
    cols = proxy.row_columns(tmp_path)
    assert set(cols) == set(proxy.EMPTY)
    assert all(v is None for v in cols.values())


def test_a_path_nginx_cannot_hold_is_refused_naming_it(tmp_path):
    """A quote, "$" (a variable to nginx), ";" or a brace in the cell's path: refused, not
    written into nginx.conf as syntax."""
    env = {"SERVER_ADDR": "198.18.0.1", "SERVER_PORT": "8080", "PROXY_PORT": "8090"}
    for bad in ('a"b', "a$b", "a;b", "a{b"):
        cell = tmp_path / bad
        with pytest.raises(proxy.ProxyConfigError, match="nginx cannot take"):
            proxy.render_config(env, cell)
    assert 'pid "' in proxy.render_config(env, tmp_path / "with space")


def test_config_with_proxy_tls_terminates_https_with_the_runs_key(tmp_path: Path) -> None:
    cell_dir = tmp_path / "run" / "cells" / "01"
    cell_dir.mkdir(parents=True)
    conf = proxy.render_config({**ENV, "PROXY_TLS": "1", "TLS_KEY": "rsa"}, cell_dir)
    keys = (tmp_path / "run" / "tls" / "rsa").resolve()
    assert "listen 10.200.0.1:8090 ssl backlog=511;" in conf
    assert f"ssl_certificate \"{keys / 'cert.pem'}\";" in conf
    assert f"ssl_certificate_key \"{keys / 'key.pem'}\";" in conf
    # The upstream stays plain HTTP.
    assert "proxy_pass http://target;" in conf
    plain = proxy.render_config({**ENV, "PROXY_TLS": "0"}, cell_dir)
    assert " ssl " not in plain and "ssl_certificate" not in plain


def test_session_resumption_on_gives_a_shared_cache_and_tickets_off_turns_both_off(tmp_path: Path) -> None:
    cell_dir = tmp_path / "run" / "cells" / "01"
    cell_dir.mkdir(parents=True)
    on = proxy.render_config({**ENV, "PROXY_TLS": "1"}, cell_dir)
    assert "ssl_session_cache shared:ltsuite:10m;" in on and "ssl_session_tickets on;" in on
    off = proxy.render_config({**ENV, "PROXY_TLS": "1", "TLS_SESSION_RESUMPTION": "0"}, cell_dir)
    assert "ssl_session_cache off;" in off and "ssl_session_tickets off;" in off
    # Plain HTTP has no session to resume; its log format still names the fields (logged "-").
    plain = proxy.render_config({**ENV, "PROXY_TLS": "0", "TLS_SESSION_RESUMPTION": "0"}, cell_dir)
    assert "ssl_session_cache" not in plain and "$ssl_session_reused\\t$connection_requests" in plain


def test_handshakes_and_resumed_sessions_are_counted_on_each_connection_s_first_request() -> None:
    # nginx 1.22's format: a full handshake (.), its connection's second request, a resumed one (r),
    # and a six-field line of an older log.
    lines = ["1795734767.501\t200\t200\t0.002\t0.000\t0.001\t.\t1",
             "1795734767.502\t200\t200\t0.002\t0.000\t0.001\t.\t2",
             "1795734767.503\t200\t200\t0.002\t0.000\t0.001\tr\t1",
             "1795734767.504\t200\t200\t0.002\t0.000\t0.001"]
    assert proxy.parse_access_line(lines[2]) == proxy.ProxyRequest(200, 200, 2.0, 0.0, 1.0, True, 1)
    assert proxy.parse_access_line(lines[3]) == proxy.ProxyRequest(200, 200, 2.0, 0.0, 1.0, None, None)
    cols = proxy.columns(lines, [])
    assert (cols["proxy_reqs"], cols["proxy_tls_handshakes"], cols["proxy_tls_resumed"]) == (4, 2, 1)
    # Plain HTTP ("-") and the old format: nothing to count, empty rather than 0.
    plain = proxy.columns(["1795734767.501\t200\t200\t0.002\t0.000\t0.001\t-\t1"], [])
    assert plain["proxy_tls_handshakes"] is None and plain["proxy_tls_resumed"] is None
    assert proxy.columns(lines[3:], [])["proxy_tls_handshakes"] is None
