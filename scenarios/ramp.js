// Ramp: the number of users follows STAGES ("5s:100,20s:200,5s:0"), each
// user calling /hello in a loop, as in the seeds' ramping k6 tests.
import http from 'k6/http';
import { check, sleep } from 'k6';
import * as env from './lib/env.js';
import { recordFailure } from './lib/failures.js';
import { LOAD_THRESHOLDS, TREND_STATS, writeSummary } from './lib/summary.js';
import { checkTargetUp } from './lib/target.js';

const config = {
  targetUrl: env.required('TARGET_URL'),
  stages: env.stages('STAGES'),
  delayMs: env.int('DELAY_MS', 0),
  requestTimeout: env.duration('REQUEST_TIMEOUT'),
  gracefulStop: env.duration('GRACEFUL_STOP'),
  thinkTimeMs: env.int('THINK_TIME_MS', 0),
};

export const options = {
  scenarios: {
    ramp: {
      executor: 'ramping-vus',
      startVUs: 0,
      stages: config.stages,
      gracefulRampDown: config.gracefulStop,
      gracefulStop: config.gracefulStop,
    },
  },
  summaryTrendStats: TREND_STATS,
  thresholds: LOAD_THRESHOLDS,
  tags: env.runTags('ramp'),
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
