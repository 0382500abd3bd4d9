// Splits failed requests by cause, from k6's error_code and the status.
// A request fails exactly when k6 counts it in http_req_failed (no response,
// or a status outside 200-399), so the six counters add up to that count.
import { Counter } from 'k6/metrics';

const causes = {
  connect: new Counter('fail_connect'),
  reset: new Counter('fail_reset'),
  timeout: new Counter('fail_timeout'),
  http_4xx: new Counter('fail_http_4xx'),
  http_5xx: new Counter('fail_http_5xx'),
  other: new Counter('fail_other'),
};

export function failureCause(res) {
  if (res.status >= 200 && res.status < 400) return null;
  const code = res.error_code;
  // 1210-1219: dial errors (timeout, refused, no free port); 1220: reset by peer.
  if (code >= 1210 && code <= 1219) return 'connect';
  if (code === 1220) return 'reset';
  if (code === 1050) return 'timeout';
  if (res.status >= 400 && res.status < 500) return 'http_4xx';
  if (res.status >= 500 && res.status < 600) return 'http_5xx';
  return 'other';
}

export function recordFailure(res) {
  const cause = failureCause(res);
  if (cause !== null) causes[cause].add(1, { error_code: String(res.error_code) });
  return cause;
}

// Every result name handleSummary must report even when it stayed at zero.
export const FAILURE_METRICS = Object.values(causes).map((c) => c.name);
