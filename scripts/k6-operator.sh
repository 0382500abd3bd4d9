#!/usr/bin/env bash
# Summary: print a k6-operator TestRun (k6.io/v1alpha1) and its ConfigMap for one matrix cell, split over N pods.
# Usage: scripts/k6-operator.sh [--cell N] [--run-id ID] --parallelism N MATRIX_FILE > testrun.yaml
# Usage: scripts/k6-operator.sh --collect testrun.yaml (--logs DIR | --kubectl)   (the row, from the pods' logs)
#
# The scenario and the modules it imports travel as a k6 archive (k6 archive)
# in the ConfigMap, with the instance-side script an SSM instance runs
# (ssm-instance.sh, started by k6-pod.sh, the `k6` on the runner pods' PATH),
# so each pod prints its summary and latency histogram to its log. The cell,
# its checks and its script are the plan the SSM fan-out sends too
# (ltsuite.fanoutplan); k6-operator splits the load with the same execution
# segments: N pods together run the configured VUs, not N times them. The
# options, the documents and the collection are Python's (ltsuite.k6operator,
# ltsuite.testrun).
set -euo pipefail

LT_PROG=k6-operator
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=scripts/lib/fanout.sh
source "$LT_ROOT/scripts/lib/fanout.sh"

fanout_exec ltsuite.k6operator 0 "$@"
