"""The application's own account of every request: Tomcat's access log of the port under test.

The suite turns it on in any Spring Boot target without code (scripts/lib/target.sh,
target_accesslog_env: Spring Boot's server.tomcat.accesslog.* properties) and Tomcat writes it,
unbuffered, to the cell's directory as tomcat-access.log, one line per request, in the pattern

  %{begin:msec}t %D %s %{remote}p %{X-Request-Id}i %m %U

Tomcat's AccessLogValve (org.apache.catalina.valves.AbstractAccessLogValve): %{begin:msec}t is
when Tomcat started the request, in epoch ms (a thread had taken the connection and read the
request line); %D the time it spent on it, in microseconds from Tomcat 10.1 on (milliseconds
before); %s the status; %{remote}p the client's port; %{Name}i a request header ("-" when the
request had none); %m the method; %U the path.

%D's unit is Tomcat's version's (its AccessLogValve documentation): milliseconds up to Tomcat 10.0
(Spring Boot 2.x: Tomcat 9), microseconds from 10.1 on (Spring Boot 3: 10.1, Spring Boot 4: 11).
The version is the one the target logs as it starts ("Starting Servlet engine: [Apache
Tomcat/9.0.83]", target.log beside the access log); a target that does not say is read as 10.1 or
later, as the suite's own target is.

The log also holds what is not the load: the runner's health checks before k6 started and the
health check of the scenarios' setup(). The load is what Tomcat began after k6 started and,
when any of those requests carries the suite's request id (scenarios/lib/requestid.js), only
those that do.

  python3 -m ltsuite.accesslog CELL_DIR    prints the cell's app_* figures as JSON
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cellfiles import read_phases, read_text
from .latency import percentile
from .numbers import num

#: The file the target writes into the cell's directory (target.sh TARGET_ACCESS_LOG_FILE).
ACCESS_LOG = "tomcat-access.log"
#: Fields of a line, in the pattern's order (target.sh TARGET_ACCESS_LOG_PATTERN).
FIELDS = 7
#: The target's output, which names its Tomcat (target.sh target_start).
TARGET_LOG = "target.log"
#: Tomcat's version as the target logs it when its engine starts.
TOMCAT_VERSION = re.compile(r"Apache Tomcat/(\d+)\.(\d+)")


@dataclass(frozen=True)
class AppRequest:
    """One request as Tomcat logged it."""

    begin_ms: int
    """When Tomcat started it (%{begin:msec}t, epoch ms, whole ms)."""
    service_us: int
    """Its processing time in microseconds (%D, converted from its Tomcat's unit)."""
    status: int
    remote_port: int | None
    request_id: str | None
    """The X-Request-Id header; None when the request had none."""
    method: str
    path: str

    @property
    def service_ms(self) -> float:
        """%D in milliseconds."""
        return self.service_us / 1000

    @property
    def end_ms(self) -> float:
        """When Tomcat finished it by its own account: begin + %D."""
        return self.begin_ms + self.service_us / 1000


def service_unit_us(target_log: str | None) -> int:
    """Microseconds in one unit of %D, from the Tomcat version the target's output names: 1000
    before Tomcat 10.1 (milliseconds), 1 from 10.1 on; 1 when it names none (the module's
    docstring)."""
    found = TOMCAT_VERSION.search(target_log or "")
    if found is None:
        return 1
    return 1000 if (int(found.group(1)), int(found.group(2))) < (10, 1) else 1


def parse_line(line: str, unit_us: int = 1) -> AppRequest | None:
    """One access-log line, or None when it does not have the pattern's fields (a line cut short
    by a killed target, or a log in another pattern). unit_us: microseconds in one unit of %D
    (service_unit_us)."""
    fields = line.split(" ")
    if len(fields) != FIELDS:
        return None
    begin, service, status, port, request_id, method, path = fields
    if not (begin.isdigit() and service.isdigit() and status.isdigit()):
        return None
    return AppRequest(begin_ms=int(begin), service_us=int(service) * unit_us, status=int(status),
                      remote_port=int(port) if port.isdigit() else None,
                      request_id=None if request_id in ("-", "") else request_id, method=method, path=path)


@dataclass
class AccessLog:
    """An access log's requests, in the order Tomcat wrote them (as each ended), and how many
    lines could not be read."""

    requests: list[AppRequest] = field(default_factory=list)
    unreadable: int = 0


def read_access_log(path: Path, unit_us: int = 1) -> AccessLog | None:
    """The access log at path; None when there is none (a target that is not a Spring Boot
    application, an external TARGET_URL, or a cell that failed before its target started).
    unit_us: microseconds in one unit of %D (service_unit_us)."""
    body = read_text(path)
    if body is None:
        return None
    log = AccessLog()
    for line in body.split("\n"):
        if line.strip() == "":
            continue
        request = parse_line(line.rstrip("\r"), unit_us)
        if request is None:
            log.unreadable += 1
        else:
            log.requests.append(request)
    return log


def load_requests(log: AccessLog, k6_start_ms: int | None) -> list[AppRequest]:
    """The load's requests: begun at or after k6 started (the runner's health checks come
    before), and, when any of them carries a request id, only those (the scenarios' setup()
    health check carries none)."""
    after = [r for r in log.requests if k6_start_ms is None or r.begin_ms >= k6_start_ms]
    if any(r.request_id is not None for r in after):
        return [r for r in after if r.request_id is not None]
    return after


def app_figures(requests: list[AppRequest] | None) -> dict[str, Any]:
    """app_reqs and the median, p99 and max of the processing time (%D, ms) of the requests the
    application logged, computed as k6 computes a trend's percentiles (ltsuite.latency), so
    they stand beside k6's lat_* on the same terms. None figures when there is no log; a log
    with no load request gives app_reqs 0 and no latency."""
    if requests is None:
        return {"app_reqs": None, "app_lat_med_ms": None, "app_lat_p99_ms": None, "app_lat_max_ms": None}
    times = sorted(r.service_ms for r in requests)
    return {
        "app_reqs": len(requests),
        "app_lat_med_ms": num(percentile(times, 0.5)) if times else None,
        "app_lat_p99_ms": num(percentile(times, 0.99)) if times else None,
        "app_lat_max_ms": num(times[-1]) if times else None,
    }


#: Requests each part of the load (its first second, the rest) needs for cold_start to compare
#: their medians.
COLD_MIN_REQUESTS = 5


@dataclass(frozen=True)
class ColdStart:
    """The application's median time (%D) in the first second of the load (from the first load
    request Tomcat began) beside the median of the rest of the load."""

    first_med_ms: float
    first_reqs: int
    rest_med_ms: float
    rest_reqs: int
    #: The rest's p99: a first second whose median is within it put the cold start in no tail.
    rest_p99_ms: float = 0.0

    @property
    def ratio(self) -> float | None:
        """first_med_ms / rest_med_ms (None when the rest took no measurable time)."""
        return None if self.rest_med_ms <= 0 else self.first_med_ms / self.rest_med_ms


def cold_start(requests: list[AppRequest] | None) -> ColdStart | None:
    """The load's first second against the rest of it, by the application's own time; None
    without an access log, or with fewer than COLD_MIN_REQUESTS requests in either part (a burst
    sends its load within its first second: there is no rest to compare)."""
    if not requests:
        return None
    start = min(r.begin_ms for r in requests)
    first = sorted(r.service_ms for r in requests if r.begin_ms < start + 1000)
    rest = sorted(r.service_ms for r in requests if r.begin_ms >= start + 1000)
    if len(first) < COLD_MIN_REQUESTS or len(rest) < COLD_MIN_REQUESTS:
        return None
    return ColdStart(first_med_ms=percentile(first, 0.5), first_reqs=len(first),
                     rest_med_ms=percentile(rest, 0.5), rest_reqs=len(rest), rest_p99_ms=percentile(rest, 0.99))


def cell_load_requests(cell_dir: Path) -> list[AppRequest] | None:
    """The load's requests of a cell directory's access log (None without one)."""
    log = read_access_log(cell_dir / ACCESS_LOG, service_unit_us(read_text(cell_dir / TARGET_LOG)))
    if log is None:
        return None
    return load_requests(log, read_phases(cell_dir / "phases.tsv").last().get("k6_start"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python3 -m ltsuite.accesslog CELL_DIR\n")
        return 2
    json.dump(app_figures(cell_load_requests(Path(args[0]))), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
