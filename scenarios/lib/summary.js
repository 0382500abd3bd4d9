// handleSummary for every scenario: the full summary data as JSON (with p99)
// at SUMMARY_FILE, and a few readable lines on stdout.
import * as env from './env.js';

export const TREND_STATS = ['min', 'avg', 'med', 'p(90)', 'p(95)', 'p(99)', 'max', 'count'];

// Thresholds that never fail but make k6 report the load-only sub-metrics
// (without the setup() health check) that the results table is built from.
// THRESHOLD_P95_MS, when set, is a real pass/fail criterion: k6 exits 99
// when the p95 latency of answered requests is above it, which the results
// record (k6_exit) without counting the cell as failed. It judges the same
// requests as lat_p95_ms: failed dials take 0 ms and would let a failing
// cell pass.
const p95Limit = env.str('THRESHOLD_P95_MS', '') === '' ? null : env.int('THRESHOLD_P95_MS', undefined, 1);
export const LOAD_THRESHOLDS = {
  'http_req_duration{traffic:load}': ['max>=0'],
  // Latency of the requests that got a 2xx/3xx answer: failed dials take 0 ms
  // and would otherwise drag the percentiles down.
  'http_req_duration{traffic:load,expected_response:true}':
    p95Limit === null ? ['max>=0'] : ['max>=0', `p(95)<${p95Limit}`],
  'http_reqs{traffic:load}': ['count>=0'],
  'http_req_failed{traffic:load}': ['rate>=0'],
};

function fmt(value) {
  return value === undefined ? '-' : Number(value).toFixed(1);
}

export function textLines(data) {
  const m = data.metrics;
  const lines = [];
  const pick = (name) => m[`${name}{traffic:load}`] || m[name];
  const d = pick('http_req_duration') && pick('http_req_duration').values;
  const reqs = pick('http_reqs') ? pick('http_reqs').values.count : 0;
  const failed = pick('http_req_failed') ? pick('http_req_failed').values.passes : 0;
  lines.push(`http_reqs=${reqs} failed=${failed} iterations=${m.iterations ? m.iterations.values.count : 0}`);
  if (d) {
    lines.push(`http_req_duration ms: min=${fmt(d.min)} avg=${fmt(d.avg)} med=${fmt(d.med)} ` +
      `p90=${fmt(d['p(90)'])} p95=${fmt(d['p(95)'])} p99=${fmt(d['p(99)'])} max=${fmt(d.max)}`);
  }
  if (m.ws_sessions) {
    const c = m.ws_close && m.ws_close.values;
    lines.push(`ws_sessions=${m.ws_sessions.values.count} ok=${m.ws_sessions_ok ? m.ws_sessions_ok.values.count : 0}` +
      (c ? ` ws_close ms: p95=${fmt(c['p(95)'])} p99=${fmt(c['p(99)'])} max=${fmt(c.max)}` : ''));
  }
  const causes = Object.keys(m).filter((k) => /^(ws_)?fail_/.test(k) && m[k].values.count > 0);
  if (causes.length > 0) {
    lines.push('failures: ' + causes.map((k) => `${k.replace(/^(ws_)?fail_/, '$1')}=${m[k].values.count}`).join(' '));
  }
  return lines.join('\n') + '\n';
}

// handleSummary(data): the handleSummary() of every scenario (re-exported by
// each: export { handleSummary } from './lib/summary.js').
export function handleSummary(data) {
  return writeSummary(data);
}

export function writeSummary(data) {
  const out = { stdout: textLines(data) };
  if (__ENV.SUMMARY_FILE) out[__ENV.SUMMARY_FILE] = JSON.stringify(data, null, 1);
  return out;
}
