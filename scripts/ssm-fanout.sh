#!/usr/bin/env bash
# Summary: run one matrix cell on every tagged k6 instance via AWS SSM, split with k6 execution segments, and write results/<run-id>/.
# Usage: scripts/ssm-fanout.sh [--dry-run] [--cell N] [--instances ID,ID...] [--no-wait] MATRIX_FILE
# Usage: scripts/ssm-fanout.sh --collect RESULTS_DIR   (finish a run sent with --no-wait)
#
# The load is the cell's, the target is the knob TARGET_URL (both as for a
# local run); the fan-out's own settings are in env/fanout.env
# (FANOUT_S3_BUCKET, FANOUT_TAG_FILTER, ...). Any of them can be set in the
# environment. See docs/fanout.md.
# --dry-run prints the boto3 calls the run would make and each instance's
# command, and sends nothing; its only AWS call is the read-only instance
# lookup, skipped when --instances is given.
#
# Everything past this entry is Python (ltsuite.fanoutmain: options, plan,
# sends, polls, collection, manifest, rows; every AWS call with boto3), but
# the matrix and the k6 archive, which are the shell libraries'
# (scripts/fanout-cell.sh). A signal or an error after the sends cancels
# what was sent and finishes the manifest as interrupted or failed.
set -euo pipefail

LT_PROG=ssm-fanout
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
# shellcheck source=scripts/lib/fanout.sh
source "$LT_ROOT/scripts/lib/fanout.sh"

fanout_exec ltsuite.fanoutmain 1 "$@"
