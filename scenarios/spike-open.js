// Open-model spike: requests arrive at RATE per TIME_UNIT whatever the server
// does, so a slow server shows up as latency and dropped iterations instead
// of being hidden by users who wait (coordinated omission).
import http from 'k6/http';
import { check } from 'k6';
import * as env from './lib/env.js';
import { recordFailure } from './lib/failures.js';
import { LOAD_THRESHOLDS, TREND_STATS, writeSummary } from './lib/summary.js';
import { checkTargetUp } from './lib/target.js';

const config = {
  targetUrl: env.required('TARGET_URL'),
  rate: env.int('RATE', undefined, 1),
  timeUnit: env.duration('TIME_UNIT'),
  duration: env.duration('DURATION'),
  preAllocatedVUs: env.int('PRE_ALLOCATED_VUS', undefined, 1),
  maxVUs: env.int('MAX_VUS', undefined, 1),
  delayMs: env.int('DELAY_MS', 0),
  requestTimeout: env.duration('REQUEST_TIMEOUT'),
  gracefulStop: env.duration('GRACEFUL_STOP'),
};
if (config.maxVUs < config.preAllocatedVUs) {
  throw new Error(`MAX_VUS (${config.maxVUs}) must be >= PRE_ALLOCATED_VUS (${config.preAllocatedVUs})`);
}

export const options = {
  scenarios: {
    spike_open: {
      executor: 'constant-arrival-rate',
      rate: config.rate,
      timeUnit: config.timeUnit,
      duration: config.duration,
      preAllocatedVUs: config.preAllocatedVUs,
      maxVUs: config.maxVUs,
      gracefulStop: config.gracefulStop,
    },
  },
  summaryTrendStats: TREND_STATS,
  thresholds: LOAD_THRESHOLDS,
  tags: env.runTags('spike-open'),
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
}

export function handleSummary(data) {
  return writeSummary(data);
}
