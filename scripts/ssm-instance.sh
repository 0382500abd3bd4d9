#!/bin/sh
# Summary: what each k6 instance of a fan-out runs: fetch the scenario files, wait for the common start, run k6, print its summary and latency histogram.
# Usage: sent by scripts/ssm-fanout.sh through SSM (AWS-RunShellScript) after
# the settings of its cell and instance (ltsuite.ssmcommand):
#   LT_WORKDIR        a directory of its own (emptied first)
#   LT_K6             the k6 binary on the instance
#   LT_BUNDLE_B64     the scenario files (tar.gz) in base64; empty: they are
#   LT_BUNDLE_S3      at this S3 URI, copied with aws LT_AWS_ARGS (one word a line)
#   LT_BUNDLE_SHA256  their checksum
#   LT_CELL_ENV       the cell's knobs, KEY=VALUE lines (kept as cell.env)
#   LT_START_AT       the epoch second at which every instance starts k6
#   LT_SUMMARY_BEGIN, LT_SUMMARY_END  the lines around k6's summary in the output
#   LT_HISTOGRAM_BEGIN, LT_HISTOGRAM_END  the lines around its latency histogram
#   LT_KEEP_SAMPLES   1: keep k6's samples file after reducing it (else removed)
#   LT_TRENDS         the trend metrics to reduce to histograms beside the
#                     latency's, comma-separated (ltsuite.columns trend_metrics)
#   "$@"              k6's arguments (set --; they write the samples to samples.json.gz)
# The runner pods of a k6-operator TestRun run it too (scripts/k6-pod.sh, the
# `k6` on their PATH): there the files are already in place, mounted from the
# run's ConfigMap, and k6-operator's starter starts every pod at once, so
#   LT_BUNDLE_DIR     set: the histogram modules are in LT_BUNDLE_DIR/ltsuite
#                     and k6's arguments name the archive (nothing fetched)
#   LT_START_AT       empty: no wait
# POSIX sh: an instance's /bin/sh may not be bash. Exit status: 0 when k6
# ended with 0 or 99 (a threshold crossed is a result), else k6's.
set -eu

if [ ! -x "$LT_K6" ]; then
  echo "k6-fanout: no k6 at $LT_K6 on this instance" >&2
  exit 127
fi
export HOME="${HOME:-/root}"
rm -rf "$LT_WORKDIR"
mkdir -p "$LT_WORKDIR"
cd "$LT_WORKDIR"

if [ -n "${LT_BUNDLE_DIR:-}" ]; then
  : # the files are mounted where k6's arguments and PYTHONPATH below find them
elif [ -n "$LT_BUNDLE_B64" ]; then
  printf '%s' "$LT_BUNDLE_B64" | base64 -d >scenarios.tar.gz
else
  (
    IFS='
'
    set -f
    # shellcheck disable=SC2086 # one word a line: split on newlines only, no globbing
    aws $LT_AWS_ARGS s3 cp --only-show-errors "$LT_BUNDLE_S3" scenarios.tar.gz
  )
fi
if [ -z "${LT_BUNDLE_DIR:-}" ]; then
  echo "$LT_BUNDLE_SHA256  scenarios.tar.gz" | sha256sum -c --quiet -
  tar -xzf scenarios.tar.gz
fi
printf '%s\n' "${LT_CELL_ENV:-}" >cell.env

# Every instance starts at the same second, however long the sends took.
now=$(date +%s)
if [ -n "${LT_START_AT:-}" ] && [ "$now" -lt "$LT_START_AT" ]; then sleep $((LT_START_AT - now)); fi
status=0
"$LT_K6" "$@" >k6.log 2>&1 || status=$?

# The answered load requests' latency histogram (ltsuite.histogram, which came
# with the scenario files), and one of each trend of LT_TRENDS: a few KB, where
# k6's samples take about 100 bytes a request. The operator merges the instances' histograms into the cell's
# percentiles. Without python3 there is none, and the row says so.
histogram_note=""
if [ -s samples.json.gz ]; then
  if PYTHONPATH="${LT_BUNDLE_DIR:-.}" python3 -m ltsuite.histogram reduce --trends "${LT_TRENDS:-}" samples.json.gz >histogram.json 2>histogram.err; then
    [ "${LT_KEEP_SAMPLES:-0}" = 1 ] || rm -f samples.json.gz
  else
    rm -f histogram.json
    histogram_note="k6-fanout: no latency histogram: $(head -c 300 histogram.err | tr '\n' ' ')"
  fi
fi

tail -n 40 k6.log
[ -z "$histogram_note" ] || echo "$histogram_note"
echo "$LT_SUMMARY_BEGIN"
if [ -s summary.json ]; then
  cat summary.json
  echo
fi
echo "$LT_SUMMARY_END"
echo "$LT_HISTOGRAM_BEGIN"
if [ -s histogram.json ]; then
  cat histogram.json
  echo
fi
echo "$LT_HISTOGRAM_END"
echo "k6-fanout exit status: $status"
case "$status" in
  0 | 99) exit 0 ;;
  *) exit "$status" ;;
esac
