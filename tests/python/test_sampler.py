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
                recv_q, send_q, estab, syn_recv, _ = sampler.socket_counts(port)
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
                recv_q, send_q, estab, _, _ = sampler.socket_counts(port)
            finally:
                accepted.close()
            assert (recv_q, send_q) == ("", "")
            assert estab == 2
