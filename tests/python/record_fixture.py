"""Copy a recorded cell directory into tests/python/fixtures/NAME, trimmed to what the row is
built from (the big files left out, the nstat snapshots cut to the counters that changed).

  python3 tests/python/record_fixture.py CELL_DIR NAME [--samples]

--samples keeps k6's per-request samples (k6-samples*.json.gz) for the latency tests.
The recorded row.json stays as the expected row.
"""
import shutil
import sys
from pathlib import Path

KEEP = ("cell.env", "summary.json", "samples.tsv", "phases.tsv", "sysctls.tsv", "netstat-delta.tsv",
        "connector.json", "k6-script.json", "waiting-room-stats.json", "websocket-stats.json", "k6-warnings.txt",
        "sampler.json", "row.json", "tomcat-access.log", "target-start.txt", "nginx-access.log", "nginx-error.log",
        "warmup-summary.json", "warmup.tsv", "k6-cpu.tsv", "netdelay.json", "tls-calibration.tsv")


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    source, name = Path(argv[1]), argv[2]
    target = Path(__file__).parent / "fixtures" / name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for keep in KEEP:
        if (source / keep).is_file():
            shutil.copy2(source / keep, target / keep)
    for log in source.glob("k6*.log"):
        lines = log.read_text(errors="replace").splitlines(keepends=True)
        (target / log.name).write_text("".join(lines[-200:]))
    if (source / "k6-summaries").is_dir():
        shutil.copytree(source / "k6-summaries", target / "k6-summaries")
    if "--samples" in argv:
        for samples in source.glob("k6-samples*.json.gz"):
            shutil.copy2(samples, target / samples.name)
    changed = set()
    for line in (source / "netstat-delta.tsv").read_text().splitlines()[1:] if (source / "netstat-delta.tsv").exists() else []:
        changed.add(line.split("\t")[0])
    for snapshot in source.glob("nstat-*.txt"):
        lines = snapshot.read_text().splitlines(keepends=True)
        kept = [line for line in lines if line.startswith("#") or line.split()[0] in changed
                or line.split()[0] in ("TcpActiveOpens", "TcpPassiveOpens")]
        (target / snapshot.name).write_text("".join(kept))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
