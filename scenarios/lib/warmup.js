// The warm-up before a cell's measured load (WARMUP, scripts/lib/warmup.sh),
// run by the runner, not a scenario a cell chooses:
// the path the cell's load asks, at the users' URL (through nginx and the
// delayer when the cell has them), for WARMUP, so the load meets a JVM that
// has loaded its classes and compiled its hot code, as the users of an
// incident met it. Never the load: its requests are tagged traffic=warmup and
// its summary is a file of its own (warmup-summary.json).
//
// A few VUs (WARMUP_VUS, fewer when Tomcat has fewer threads or connections),
// each on a kept-alive connection: up to WARMUP=5s a VU sends one request
// fewer than the server lets a connection carry (TOMCAT_MAX_KEEP_ALIVE_REQUESTS;
// nginx's 1000 with PROXY=nginx), spread evenly over WARMUP, so the server
// never closes it and the warm-up connects once per VU; a longer WARMUP keeps
// that pace (about 20 a second a VU) and so sends more, the server closing a
// connection after each of its TOMCAT_MAX_KEEP_ALIVE_REQUESTS. The runner then
// removes the TIME-WAIT sockets those connections leave.
//
// What it asks: the shipped scenarios' URL (requestOf: TARGET_PATH, else
// /hello?delayMs=DELAY_MS, which waiting-room and websocket warm up on too,
// their own endpoints keeping state the load must find empty); with a
// script of one's own TARGET_PATH, else the health path when it is on the
// port under test, else the readiness probe the suite turns on in a jar of
// one's own (/readyz), or the suite's own /health.
import http from 'k6/http';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Trend } from 'k6/metrics';
import * as env from './env.js';
import { requestOf } from './hello.js';
import { TREND_STATS } from './summary.js';

const WARMUP_VUS = 4;
// nginx's keepalive_requests (its default since 1.19.10; the suite sets none).
const NGINX_KEEPALIVE_REQUESTS = 1000;
// The shortest time between a VU's requests: 99 requests over 5 s (WARMUP's
// default for a jar of one's own) are 50.5 ms apart; a longer WARMUP keeps
// about that pace.
const PACE_FLOOR_MS = 50;

// Requests answered in the warm-up's first and last second: their median is
// the row's warmup_first_ms and warmup_last_ms.
const firstSecond = new Trend('warmup_first_second', true);
const lastSecond = new Trend('warmup_last_second', true);

// knob(key): a whole-number knob, or null when it is empty (TARGET_CMD
// empties the TOMCAT_* knobs).
function knob(key) {
  return env.str(key, '') === '' ? null : env.int(key, undefined, 0);
}

// ownScript(scenario): a k6 script of one's own is a path (k6_own_script).
function ownScript(scenario) {
  return scenario.includes('/') || scenario.endsWith('.js');
}

// warmupPath(): the path and query the warm-up asks, and the URL's tags. A
// /hello whose delay could not end within the warm-up (DELAY_MS at or above
// WARMUP) is asked without it, the same controller: such a request would hold
// one of the server's threads past the warm-up and into the load, the server
// sleeping on after k6 has given up (REQUEST_TIMEOUT below DELAY_MS).
function warmupRequest(targetUrl, warmupMs) {
  const targetPath = env.urlPath('TARGET_PATH', '');
  if (!ownScript(env.str('SCENARIO'))) {
    const delayMs = env.int('DELAY_MS', 0);
    return requestOf({ targetUrl, targetPath, delayMs: delayMs >= warmupMs ? 0 : delayMs });
  }
  if (targetPath) return { url: `${targetUrl}${targetPath}`, tags: {} };
  const health = env.str('TARGET_HEALTH_PATH', '/health');
  let path = health;
  if (health.startsWith('/actuator/') && env.str('TARGET_CMD', '') === '') {
    // The actuator is on its own loopback port (target.sh): not the users'.
    path = env.str('TARGET_JAR', '') === '' ? '/health' : '/readyz';
  }
  return { url: `${targetUrl}${path}`, tags: {} };
}

// vusFor(): WARMUP_VUS, at most Tomcat's threads (unless virtual) and
// connections, so no warm-up connection waits in the accept queue.
function vusFor() {
  let vus = WARMUP_VUS;
  const connections = knob('TOMCAT_MAX_CONNECTIONS');
  const threads = env.str('TOMCAT_VIRTUAL_THREADS', '0') === '1' ? null : knob('TOMCAT_MAX_THREADS');
  for (const bound of [connections, threads]) {
    if (bound !== null && bound > 0) vus = Math.min(vus, bound);
  }
  return vus;
}

// perConnection(): the requests a VU sends, one fewer than its connection
// may carry; null: no bound known (TARGET_CMD), or the server closes after
// every request (TOMCAT_MAX_KEEP_ALIVE_REQUESTS=1).
function perConnection() {
  const most = env.str('PROXY', 'none') === 'nginx' ? NGINX_KEEPALIVE_REQUESTS : knob('TOMCAT_MAX_KEEP_ALIVE_REQUESTS');
  return most === null || most <= 1 ? null : most - 1;
}

const targetUrl = env.required('TARGET_URL');
const warmupMs = env.durationMs('WARMUP', undefined, true);
const request = warmupRequest(targetUrl, warmupMs);
const vus = vusFor();
const perVu = perConnection();
// A VU's requests: one connection's worth (perVu) for every PACE_FLOOR_MS x
// perVu of WARMUP (at least one), spread evenly over WARMUP, the i-th not
// before i x pace. A longer WARMUP sends more requests, not the same ones
// slower: the JIT compiles what was called often, not what was called long
// ago. Past its first connection's worth, the server closes a connection
// after its TOMCAT_MAX_KEEP_ALIVE_REQUESTS and k6 opens the next.
const connectionsPerVu = perVu === null ? 1 : Math.max(1, Math.floor(warmupMs / (PACE_FLOOR_MS * perVu)));
const perVuTotal = perVu === null ? null : perVu * connectionsPerVu;
const paceMs = perVu === null ? 0 : warmupMs / perVuTotal;
const tags = { traffic: 'warmup', name: 'warmup' };

export const options = {
  scenarios: {
    warmup: {
      executor: 'constant-vus',
      vus,
      duration: env.positiveDuration('WARMUP'),
      gracefulStop: env.positiveDuration('REQUEST_TIMEOUT'),
    },
  },
  summaryTrendStats: TREND_STATS,
  tags: Object.assign(env.runTags('warmup'), { traffic: 'warmup' }),
};

export default function () {
  const started = exec.scenario.startTime;
  const i = exec.vu.iterationInScenario;
  if (perVuTotal !== null && i >= perVuTotal) {
    // It has sent all it was given: idle until the end.
    const left = started + warmupMs - Date.now();
    if (left > 0) sleep(left / 1000);
    return;
  }
  const due = started + i * paceMs;
  if (Date.now() < due) sleep((due - Date.now()) / 1000);
  const at = Date.now() - started;
  const res = http.get(request.url, { timeout: env.str('REQUEST_TIMEOUT'), tags });
  if (res.status >= 200 && res.status < 400) {
    if (at < 1000) firstSecond.add(res.timings.duration);
    if (at >= warmupMs - 1000) lastSecond.add(res.timings.duration);
  }
}

export function handleSummary(data) {
  const path = request.url.slice(targetUrl.length);
  const out = Object.assign({}, data, { warmup: { path, vus, per_connection: perVu, per_vu: perVuTotal, pace_ms: paceMs } });
  const reqs = data.metrics.http_reqs ? data.metrics.http_reqs.values.count : 0;
  const failed = data.metrics.http_req_failed ? data.metrics.http_req_failed.values.passes : 0;
  const result = { stdout: `warm-up: ${reqs} requests to ${path} (${failed} failed) from ${vus} VUs\n` };
  if (__ENV.SUMMARY_FILE) result[__ENV.SUMMARY_FILE] = JSON.stringify(out, null, 1);
  return result;
}
