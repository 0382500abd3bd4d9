// Counts failed requests by cause (causes.js: from k6's error_code, the
// status and the message), one fail_<cause> counter per cause of the table
// (scripts/ltsuite/causes.tsv). A request fails exactly when k6 counts it in
// http_req_failed (no response, or a status outside 200-399), so the
// counters add up to that count.
import { Counter } from 'k6/metrics';
import { FAILURE_CAUSES, failureCause } from './causes.js';

const causes = Object.fromEntries(FAILURE_CAUSES.map((cause) => [cause, new Counter(`fail_${cause}`)]));

export function recordFailure(res) {
  const cause = failureCause(res);
  if (cause !== null) causes[cause].add(1, { error_code: String(res.error_code) });
  return cause;
}

// Every result name handleSummary must report even when it stayed at zero.
export const FAILURE_METRICS = Object.values(causes).map((c) => c.name);
