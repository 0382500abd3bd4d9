// What the /hello scenarios share: their common knobs, their options and the
// iteration itself (GET /hello?delayMs=..., or TARGET_PATH on a service of
// one's own; failure cause, status check, think time). Each scenario adds
// only its executor.
import http from 'k6/http';
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import * as env from './env.js';
import * as delivered from './delivered.js';
import { recordFailure } from './failures.js';
import { clearRequestId, withRequestId, withUserRequestId } from './requestid.js';
import { LOAD_THRESHOLDS, TREND_STATS } from './summary.js';

// helloConfig(): the knobs every /hello scenario reads, read once.
export function helloConfig() {
  return {
    targetUrl: env.required('TARGET_URL'),
    delayMs: env.int('DELAY_MS', 0),
    targetPath: env.urlPath('TARGET_PATH', ''),
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

// requestOf(config): the URL every request asks and its k6 tags: TARGET_PATH
// as written (no delayMs: the service is not the suite's /hello), named by k6
// (by the URL: the samples' name tag shows what was asked), else the suite's
// /hello?delayMs=DELAY_MS named hello (a name tag replaces k6's url tag too).
// One URL a run either way: the query adds no time series.
export function requestOf(config) {
  if (config.targetPath) return { url: `${config.targetUrl}${config.targetPath}`, tags: {} };
  return { url: `${config.targetUrl}/hello?delayMs=${config.delayMs}`, tags: { name: 'hello' } };
}

// helloIteration(config): the default function of a /hello scenario (it
// takes setup()'s data and hands it to config.barrier, if any). With
// config.lastIteration set, that iteration (k6's __ITER) asks the server to
// close the connection after its answer: the user leaves, and its idle
// keep-alive connection does not hold one of max-connections.
export function helloIteration(config) {
  const { url, tags } = requestOf(config);
  const params = { timeout: config.requestTimeout, tags };
  const lastParams = Object.assign({}, params, { headers: { Connection: 'close' } });
  const last = config.lastIteration === undefined ? -1 : config.lastIteration;
  const barrier = config.barrier || null;
  return function (data) {
    delivered.iterationStarted();
    // A start barrier (burst) waits after the iteration counts as started,
    // so nothing but the request follows the release.
    if (barrier !== null) barrier(data);
    const requestParams = withRequestId(__ITER === last ? lastParams : params);
    const res = delivered.send(() => http.get(url, requestParams));
    clearRequestId();
    recordFailure(res);
    check(res, { 'status is 200': (r) => r.status === 200 });
    if (config.thinkTimeMs > 0) sleep(config.thinkTimeMs / 1000);
  };
}

// helloUsers(config): the default function of a scenario whose VUs carry
// several users each (config.usersPerVu; config.vus users in all, numbered
// from 1 across the whole test by the VU's idInTest: VU k carries users
// (k-1) x usersPerVu + 1 on, the last VU the rest). Each user sends
// config.requestsPerVu requests one after the other, with k6/http's
// asyncRequest, so every user of the VU waits only for its own answers: one
// user's failure, cause and time are its own, as with a VU of its own. The
// VU runs one iteration for all its users; the suite's iteration counters
// (delivered.js) count each user's requests as that user's iterations. At the barrier's release the VU
// only sends: each user's request is made ready before it, and the users'
// first-request times are recorded after all have left. Its users share the
// VU's connections: a connection one user leaves open may carry another
// user's next request (with one request each, which says Connection: close,
// none is left open, and burst.js turns reuse off so that each request waits
// for its own connection).
export function helloUsers(config) {
  const { url, tags } = requestOf(config);
  const last = config.requestsPerVu - 1;
  const barrier = config.barrier || null;
  const think = () => new Promise((resolve) => setTimeout(resolve, config.thinkTimeMs));
  const paramsFor = (id, i) => withUserRequestId({ timeout: config.requestTimeout, tags,
    headers: i === last ? { Connection: 'close' } : {} }, id, i, i + 1);
  // answered(res): what a user does with an answer (the suite's own metrics).
  const answered = (res) => {
    delivered.requestReturned();
    delivered.ended(Date.now());
    delivered.userIterationEnded();
    recordFailure(res);
    check(res, { 'status is 200': (r) => r.status === 200 });
  };
  // A user's requests after its first, each once the one before was answered.
  async function rest(id, first) {
    answered(await first);
    if (config.thinkTimeMs > 0) await think();
    for (let i = 1; i <= last; i += 1) {
      delivered.iterationStarted();
      const params = paramsFor(id, i);
      delivered.requestSent();
      const pending = http.asyncRequest('GET', url, null, params);
      clearRequestId();
      answered(await pending);
      if (config.thinkTimeMs > 0) await think();
    }
  }
  return async function (data) {
    const from = (exec.vu.idInTest - 1) * config.usersPerVu + 1;
    const ids = [];
    for (let id = from; id < from + config.usersPerVu && id <= config.vus; id += 1) ids.push(id);
    // Each user's request is an iteration of its own, as with a VU a user.
    delivered.iterationStarted(ids.length);
    const params = ids.map((id) => paramsFor(id, 0));
    clearRequestId();
    if (barrier !== null) barrier(data);
    const at = new Array(ids.length);
    const pending = new Array(ids.length);
    for (let u = 0; u < ids.length; u += 1) {
      at[u] = Date.now();
      // The id in the samples' metadata as the request is made (k6 takes it then).
      withUserRequestId(params[u], ids[u], 0, 1);
      delivered.requestSent();
      pending[u] = http.asyncRequest('GET', url, null, params[u]);
    }
    clearRequestId();
    for (const t of at) delivered.userStarted(t);
    await Promise.all(pending.map((first, u) => rest(ids[u], first)));
  };
}
