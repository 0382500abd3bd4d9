// Why a request failed, from k6's error_code, the status and the error
// message: the one rule the suite's scenarios (failures.js) and a script of
// one's own (own-script.js) count failures by. A request fails exactly when
// k6 counts it in http_req_failed (no response, or a status outside
// 200-399), so the causes add up to that count. The rules are the suite's one
// table of causes, scripts/ltsuite/causes.tsv, which the Python side reads
// (ltsuite.causes) and which causes-table.js is made from
// (tests/python/test_causes.py checks both sides agree).
import { RULES } from './causes-table.js';

const within = (range, value) => range === null || (value >= range[0] && value <= range[1]);

// causeOf(res): the cause of the first rule that matches ("answered" for a
// 2xx/3xx answer), "other" when none does.
export function causeOf(res) {
  for (const rule of RULES) {
    if (within(rule.status, res.status) && within(rule.errorCode, res.error_code)
      && String(res.error || '').includes(rule.error)) return rule.cause;
  }
  return 'other';
}

// failureCause(res): null for an answered request, else its cause.
export function failureCause(res) {
  const cause = causeOf(res);
  return cause === 'answered' ? null : cause;
}

// FAILURE_CAUSES: the causes of a failed request, in the table's order (the
// fail_<cause> counters).
export const FAILURE_CAUSES = RULES.map((r) => r.cause).filter((c) => c !== 'answered');

// causeCodes(): k6's error codes of every cause told apart by its code, by
// the counter that counts them ("fail_connect": [1210, ...]): the error-code
// ranges of the rules that need no message, and 1000 + status for an HTTP
// answer's rules (k6 sets that code for a 4xx/5xx). A cause told apart by its
// message alone (no_fd) has no code of its own: a script of one's own counts
// it with the code's cause, and the row takes it from k6's log. Made on first
// use, not as the module loads: every VU loads it, and the 211 codes (before the TLS range) cost
// each one 0.5 ms of init (2,000 VUs of the burst scenario: 1.1 s), where
// only a script of one's own needs them.
let codesByCause = null;
export function causeCodes() {
  if (codesByCause !== null) return codesByCause;
  const codes = new Set();
  for (const rule of RULES) {
    if (rule.cause === 'answered' || rule.error !== '') continue;
    if (rule.errorCode !== null) {
      for (let c = rule.errorCode[0]; c <= rule.errorCode[1]; c += 1) codes.add(c);
    } else if (rule.status !== null) {
      for (let s = Math.max(rule.status[0], 400); s <= rule.status[1]; s += 1) codes.add(1000 + s);
    }
  }
  codesByCause = {};
  for (const code of [...codes].sort((a, b) => a - b)) {
    const status = code >= 1400 ? code - 1000 : 0;
    const cause = `fail_${failureCause({ status, error_code: code })}`;
    (codesByCause[cause] = codesByCause[cause] || []).push(code);
  }
  return codesByCause;
}
