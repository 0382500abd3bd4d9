// Keep-alive and TIME_WAIT: each user sends REQUESTS_PER_VU requests, with
// connection reuse on or off. Whoever closes a connection first holds its
// TIME_WAIT. CONNECTION_REUSE=0 alone is k6's noConnectionReuse: requests
// say "Connection: close" and the server closes first. With CLIENT_CLOSES=1
// instead, every iteration opens a new connection and k6 closes it
// (noVUConnectionReuse), so the client holds TIME_WAIT; with a narrow client
// port range and no TIME_WAIT reuse, connects then fail with "cannot assign
// requested address" (counted in fail_connect).
import http from 'k6/http';
import { check, sleep } from 'k6';
import * as env from './lib/env.js';
import { recordFailure } from './lib/failures.js';
import { LOAD_THRESHOLDS, TREND_STATS, writeSummary } from './lib/summary.js';
import { checkTargetUp } from './lib/target.js';

const config = {
  targetUrl: env.required('TARGET_URL'),
  vus: env.int('VUS', undefined, 1),
  requestsPerVu: env.int('REQUESTS_PER_VU', undefined, 1),
  connectionReuse: env.bool('CONNECTION_REUSE'),
  clientCloses: env.bool('CLIENT_CLOSES'),
  duration: env.duration('DURATION'),
  delayMs: env.int('DELAY_MS', 0),
  requestTimeout: env.duration('REQUEST_TIMEOUT'),
  gracefulStop: env.duration('GRACEFUL_STOP'),
  thinkTimeMs: env.int('THINK_TIME_MS', 0),
};

export const options = {
  scenarios: {
    keepalive: {
      executor: 'per-vu-iterations',
      vus: config.vus,
      iterations: config.requestsPerVu,
      maxDuration: config.duration,
      gracefulStop: config.gracefulStop,
    },
  },
  noConnectionReuse: !config.connectionReuse && !config.clientCloses,
  noVUConnectionReuse: !config.connectionReuse && config.clientCloses,
  summaryTrendStats: TREND_STATS,
  thresholds: LOAD_THRESHOLDS,
  tags: env.runTags('keepalive'),
};

const url = `${config.targetUrl}/hello?delayMs=${config.delayMs}`;
const params = { timeout: config.requestTimeout, tags: { name: 'hello' } };

export function setup() {
  checkTargetUp(config.targetUrl);
}

export default function () {
  const res = http.get(url, params);
  recordFailure(res);
  check(res, { 'status is 200': (r) => r.status === 200 });
  if (config.thinkTimeMs > 0) sleep(config.thinkTimeMs / 1000);
}

export function handleSummary(data) {
  return writeSummary(data);
}
