#!/bin/sh
# Summary: `k6` as the runner pods of a k6-operator TestRun find it on their PATH: `k6 run ...` runs scripts/ssm-instance.sh as an SSM instance does; any other command goes to k6 itself.
# Usage: mounted from the run's ConfigMap at /ltsuite/bin/k6 (ltsuite.testrun),
# first on the pod's PATH, so the command k6-operator gives its runners
# (`k6 run --quiet --execution-segment=... /test/archive.tar --address=...
# --paused --tag instance_id=N ...`) comes here. The settings are the pod's
# environment (the TestRun's runner.env):
#   LT_K6          k6 itself (copied from the k6 image by an init container)
#   LT_BUNDLE_DIR  where ssm-instance.sh and the histogram modules are mounted
#   LT_WORKDIR     the parent of this pod's working directory (LT_POD_NAME, the
#                  pod's name from the downward API, below it)
#   LT_SUMMARY_BEGIN ... LT_KEEP_SAMPLES, LT_CELL_ENV  as for ssm-instance.sh
# The initializer pod (a copy of the runner's spec) runs `k6 archive` and
# `k6 inspect` through here too: they go to k6 unchanged.
# POSIX sh. Exit status: ssm-instance.sh's (0 when k6 ended with 0 or 99).
set -eu

if [ "${1:-}" != run ]; then
  exec "$LT_K6" "$@"
fi
LT_WORKDIR="${LT_WORKDIR:-/tmp/k6-fanout}/${LT_POD_NAME:-$(hostname)}"
export LT_WORKDIR
# Every request's samples, which the instance reduces to its latency
# histogram; the summary where ssm-instance.sh prints it from.
exec sh "$LT_BUNDLE_DIR/ssm-instance.sh" "$@" --out json=samples.json.gz -e "SUMMARY_FILE=$LT_WORKDIR/summary.json"
