// Why a request failed, from k6's error_code and the status: the one rule
// the suite's scenarios (failures.js) and a script of one's own
// (own-script.js) count failures by. A request fails exactly when k6 counts
// it in http_req_failed (no response, or a status outside 200-399), so the
// seven causes add up to that count. The rule is the suite's one table of
// causes, scripts/ltsuite/causes.tsv, which the Python side reads (the
// report's chart: scripts/lib/k6-series.py); tests/python/test_causes.py
// runs this file against it.

// failureCause(res): null for an answered request, else its cause.
export function failureCause(res) {
  if (res.status >= 200 && res.status < 400) return null;
  const code = res.error_code;
  // A TCP error whose message says the client ran out of file descriptors
  // (EMFILE: k6 gives it 1213, "dial tcp ...: socket: too many open files"):
  // not a connect failure, a limit of the client's.
  if (code >= 1200 && code <= 1299 && String(res.error || '').includes('too many open files')) return 'no_fd';
  // 1210-1219: dial errors (timeout, refused, no free port); 1220: reset by peer.
  if (code >= 1210 && code <= 1219) return 'connect';
  if (code === 1220) return 'reset';
  if (code === 1050) return 'timeout';
  if (res.status >= 400 && res.status < 500) return 'http_4xx';
  if (res.status >= 500 && res.status < 600) return 'http_5xx';
  return 'other';
}

const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

// causeCodes(): k6's error codes of every cause but "other" and "no_fd", by
// the counter that counts them ("fail_connect": [1210, ...]). k6 sets 1000 +
// status for an HTTP 4xx/5xx answer. no_fd has no code of its own (its
// message tells it apart): a script of one's own counts it in fail_connect,
// and the row takes it from k6's log. Made on first use, not as the module
// loads: every VU loads it, and the 211 codes cost each one 0.5 ms of init
// (2,000 VUs of the burst scenario: 1.1 s), where only a script of one's own
// needs them.
let codesByCause = null;
export function causeCodes() {
  if (codesByCause !== null) return codesByCause;
  codesByCause = {};
  for (const code of [1050, ...range(1210, 1220), ...range(1400, 1599)]) {
    const status = code >= 1400 ? code - 1000 : 0;
    const cause = `fail_${failureCause({ status, error_code: code })}`;
    (codesByCause[cause] = codesByCause[cause] || []).push(code);
  }
  return codesByCause;
}
