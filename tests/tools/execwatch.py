"""execwatch ROOT_PID OUT: every program started (execve) by a descendant of ROOT_PID, as the
kernel reports it, logged to OUT until SIGTERM: "epoch ms<TAB>pid<TAB>exe<TAB>arguments".

The kernel's process events connector (NETLINK_CONNECTOR, CN_IDX_PROC: linux/cn_proc.h) sends
a PROC_EVENT_EXEC for every execve on the host, traced or not, through any wrapper or
sys.executable; nothing is injected into the programs (no ptrace, no PATH wrapper). Each event's
/proc/PID is read at once for its exe, arguments and parents; a process already gone by then is
logged with exe "?" (a count of starts that misses one is then short, never silently right).
Events the kernel could not queue (the socket's buffer full: ENOBUFS, on a busy host) are logged
as a line "LOST" so a count over the log can say it is short rather than be wrong; the buffer is
32 MiB (SO_RCVBUFFORCE, as root) to make that rare.
"""
from __future__ import annotations

import errno
import os
import signal
import socket
import struct
import sys
import time

NETLINK_CONNECTOR = 11
CN_IDX_PROC = 1
CN_VAL_PROC = 1
PROC_CN_MCAST_LISTEN = 1
PROC_EVENT_EXEC = 0x00000002
NLMSG_DONE = 3
#: linux/asm-generic/socket.h; Python's socket module names it only from 3.12 on.
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
NLMSG = struct.Struct("=IHHII")
CN_MSG = struct.Struct("=IIIIHH")
EVENT = struct.Struct("=IIQ")


def parent(pid: int) -> int | None:
    """PID's parent (/proc/PID/stat field 4), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def descends(pid: int, root: int) -> bool | None:
    """Whether ROOT is among PID's ancestors (PID itself included); None when the chain broke."""
    seen = 0
    while pid > 1 and seen < 64:
        if pid == root:
            return True
        up = parent(pid)
        if up is None:
            return None
        pid, seen = up, seen + 1
    return False


def describe(pid: int) -> tuple[str, str]:
    """PID's exe and arguments (space-joined), "?" for what is gone. Read at the exec event,
    the arguments may not be readable yet (seen: an empty cmdline): read again, every 2 ms for
    up to 100 ms, until they are."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = "?"
    args = "?"
    for _ in range(50):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmd:
                args = cmd.read().rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            return exe, "?"
        if args:
            break
        time.sleep(0.002)
    return exe, args


def main(argv: list[str]) -> int:
    root, out_path = int(argv[0]), argv[1]
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
    sock.bind((os.getpid(), CN_IDX_PROC))
    body = CN_MSG.pack(CN_IDX_PROC, CN_VAL_PROC, 0, 0, 4, 0) + struct.pack("=I", PROC_CN_MCAST_LISTEN)
    sock.send(NLMSG.pack(NLMSG.size + len(body), NLMSG_DONE, 0, 0, os.getpid()) + body)
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    sock.settimeout(0.2)
    with open(out_path, "w", encoding="utf-8") as out:
        print("ready", flush=True)
        while not stop[0]:
            try:
                data = sock.recv(65536)
            except (socket.timeout, InterruptedError):
                continue
            except OSError as err:
                if err.errno != errno.ENOBUFS:
                    raise
                out.write(f"{int(time.time() * 1000)}\t0\tLOST\tevents the kernel could not queue\n")
                out.flush()
                continue
            offset = NLMSG.size + CN_MSG.size
            if len(data) < offset + EVENT.size + 8:
                continue
            what = EVENT.unpack_from(data, offset)[0]
            if what != PROC_EVENT_EXEC:
                continue
            pid = struct.unpack_from("=i", data, offset + EVENT.size)[0]
            exe, args = describe(pid)
            if descends(pid, root) is False:
                continue
            out.write(f"{int(time.time() * 1000)}\t{pid}\t{exe}\t{args}\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
