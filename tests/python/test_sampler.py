"""The sampler's socket counts (scripts/lib/sampler.py), over real sockets of this namespace."""
from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

SAMPLER = Path(__file__).resolve().parents[2] / "scripts" / "lib" / "sampler.py"


def load_sampler():
    spec = importlib.util.spec_from_file_location("sampler", SAMPLER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_connection_beside_the_listener_counts_once_not_by_both_its_ends():
    """A proxy in the server's namespace (nginx) connects to the target's port: the target's end is
    the server's connection, the proxy's end is not a second one."""
    sampler = load_sampler()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as first, \
                socket.create_connection(("127.0.0.1", port)) as second:
            accepted = [listener.accept()[0] for _ in range(2)]
            try:
                recv_q, send_q, estab, syn_recv, _ = sampler.socket_counts(port)[:5]
            finally:
                for conn in accepted:
                    conn.close()
            assert (recv_q, send_q) == (0, 8)
            assert (estab, syn_recv) == (2, 0)
            assert first and second


def test_without_a_listener_the_connections_towards_the_port_count():
    """An external target seen from the users' side: no listener here, their ends are the count."""
    sampler = load_sampler()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):
            accepted, _ = listener.accept()
            listener.close()
            try:
                recv_q, send_q, estab, _, _ = sampler.socket_counts(port)[:5]
            finally:
                accepted.close()
            assert (recv_q, send_q) == ("", "")
            assert estab == 2


def test_a_tomcat_figure_its_executor_does_not_keep_is_unmeasured_not_minus_one():
    # Tomcat on virtual threads answers tomcat.threads.busy -1 (no pool); a pool's 3 stays 3.
    import http.server
    import json
    import threading

    values = {"/actuator/metrics/tomcat.threads.busy": -1.0, "/actuator/metrics/tomcat.connections.current": 3.0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = json.dumps({"measurements": [{"statistic": "VALUE", "value": values[self.path]}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert load_sampler().Actuator(server.server_address[1]).values() == ["", "3"]
    finally:
        server.shutdown()
        server.server_close()
