// What the /hello scenarios share: their common knobs, their options and the
// iteration itself (GET /hello?delayMs=..., failure cause, status check,
// think time). Each scenario adds only its executor.
import http from 'k6/http';
import { check, sleep } from 'k6';
import * as env from './env.js';
import * as delivered from './delivered.js';
import { recordFailure } from './failures.js';
import { clearRequestId, withRequestId } from './requestid.js';
import { LOAD_THRESHOLDS, TREND_STATS } from './summary.js';

// helloConfig(): the knobs every /hello scenario reads, read once.
export function helloConfig() {
  return {
    targetUrl: env.required('TARGET_URL'),
    delayMs: env.int('DELAY_MS', 0),
    requestTimeout: env.positiveDuration('REQUEST_TIMEOUT'),
    gracefulStop: env.duration('GRACEFUL_STOP'),
    thinkTimeMs: env.int('THINK_TIME_MS', 0),
  };
}

// loadOptions(name, executor, extra): k6 options with one scenario, p99 in
// the summary, the load-only sub-metrics and the run's tags.
export function loadOptions(name, executor, extra = {}) {
  return Object.assign({
    scenarios: { [name.replace(/-/g, '_')]: executor },
    summaryTrendStats: TREND_STATS,
    thresholds: LOAD_THRESHOLDS,
    tags: env.runTags(name),
  }, extra);
}

// helloIteration(config): the default function of a /hello scenario (it
// takes setup()'s data and hands it to config.barrier, if any). With
// config.lastIteration set, that iteration (k6's __ITER) asks the server to
// close the connection after its answer: the user leaves, and its idle
// keep-alive connection does not hold one of max-connections.
export function helloIteration(config) {
  const url = `${config.targetUrl}/hello?delayMs=${config.delayMs}`;
  const params = { timeout: config.requestTimeout, tags: { name: 'hello' } };
  const lastParams = Object.assign({}, params, { headers: { Connection: 'close' } });
  const last = config.lastIteration === undefined ? -1 : config.lastIteration;
  const barrier = config.barrier || null;
  return function (data) {
    delivered.iterationStarted();
    // A start barrier (burst) waits after the iteration counts as started,
    // so nothing but the request follows the release.
    if (barrier !== null) barrier(data);
    const res = delivered.send(() => http.get(url, withRequestId(__ITER === last ? lastParams : params)));
    clearRequestId();
    recordFailure(res);
    check(res, { 'status is 200': (r) => r.status === 200 });
    if (config.thinkTimeMs > 0) sleep(config.thinkTimeMs / 1000);
  };
}
