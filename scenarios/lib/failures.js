// Counts failed requests by cause (causes.js: from k6's error_code and the
// status). A request fails exactly when k6 counts it in http_req_failed (no
// response, or a status outside 200-399), so the seven counters add up to
// that count.
import { Counter } from 'k6/metrics';
import { failureCause } from './causes.js';

const causes = {
  no_fd: new Counter('fail_no_fd'),
  connect: new Counter('fail_connect'),
  reset: new Counter('fail_reset'),
  timeout: new Counter('fail_timeout'),
  http_4xx: new Counter('fail_http_4xx'),
  http_5xx: new Counter('fail_http_5xx'),
  other: new Counter('fail_other'),
};

export function recordFailure(res) {
  const cause = failureCause(res);
  if (cause !== null) causes[cause].add(1, { error_code: String(res.error_code) });
  return cause;
}

// Every result name handleSummary must report even when it stayed at zero.
export const FAILURE_METRICS = Object.values(causes).map((c) => c.name);
