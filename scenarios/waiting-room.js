// Long-polling waiting room: each iteration is one visitor. It registers
// with POST /api/wait, then polls POST /api/entry every pollingPeriod (as the
// server says) until canEnter, then stays THINK_TIME_MS. Users follow STAGES.
// A visitor whose polls did not get through for a while is forgotten by the
// room (404, unknown token): it registers again, at the back of the line, as
// a browser tab of a real waiting room would (wr_forgotten counts it).
import http from 'k6/http';
import { sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import * as delivered from './lib/delivered.js';
import * as env from './lib/env.js';
import { recordFailure } from './lib/failures.js';
import { LOAD_THRESHOLDS, TREND_STATS, writeSummary } from './lib/summary.js';
import { withRequestId } from './lib/requestid.js';

const config = {
  targetUrl: env.required('TARGET_URL'),
  stages: env.stages('STAGES'),
  maxPolls: env.int('MAX_POLLS', undefined, 1),
  requestTimeout: env.positiveDuration('REQUEST_TIMEOUT'),
  gracefulStop: env.duration('GRACEFUL_STOP'),
  thinkTimeMs: env.int('THINK_TIME_MS', 0),
};

const waitRequests = new Counter('wr_wait_requests');
const entryRequests = new Counter('wr_entry_requests');
const canEnterTrue = new Counter('wr_can_enter_true');
const canEnterFalse = new Counter('wr_can_enter_false');
const visitors = new Counter('wr_visitors');
const admitted = new Counter('wr_admitted');
const gaveUp = new Counter('wr_gave_up');
const forgotten = new Counter('wr_forgotten');
const timeToAdmission = new Trend('wr_time_to_admission', true);

export const options = {
  scenarios: {
    waiting_room: {
      executor: 'ramping-vus',
      startVUs: 0,
      stages: config.stages,
      gracefulRampDown: config.gracefulStop,
      gracefulStop: config.gracefulStop,
    },
  },
  summaryTrendStats: TREND_STATS,
  thresholds: Object.assign({ wr_time_to_admission: ['max>=0'] }, LOAD_THRESHOLDS),
  tags: env.runTags('waiting-room'),
};

// Built once, not per request: every VU polls many times.
const jsonParams = (name) => ({
  timeout: config.requestTimeout,
  headers: { 'Content-Type': 'application/json' },
  tags: { name },
});
const waitParams = jsonParams('wait');
const entryParams = jsonParams('entry');

// answer(res): the parsed body of a 200 answer, or null.
function answer(res) {
  recordFailure(res);
  if (res.status !== 200) return null;
  try {
    return res.json();
  } catch (e) {
    return null;
  }
}

function count(body) {
  if (body.canEnter) canEnterTrue.add(1);
  else canEnterFalse.add(1);
}

// register(): POST /api/wait; its ticket, or null.
function register() {
  waitRequests.add(1);
  const params = withRequestId(waitParams);
  return answer(delivered.send(() => http.post(`${config.targetUrl}/api/wait`, '{}', params)));
}

export default function () {
  delivered.iterationStarted();
  const started = Date.now();
  let body = register();
  if (body === null) return;
  visitors.add(1);
  count(body);
  let polls = 0;
  // Forgotten by the room and not registered again yet.
  let lost = false;
  while (!body.canEnter) {
    if (polls >= config.maxPolls) {
      gaveUp.add(1);
      return;
    }
    sleep((body.pollingPeriod || 1000) / 1000);
    polls += 1;
    let next = null;
    if (!lost) {
      entryRequests.add(1);
      const token = body.token;
      const params = withRequestId(entryParams);
      const res = delivered.send(() => http.post(`${config.targetUrl}/api/entry`, JSON.stringify({ token }), params));
      next = answer(res);
      lost = res.status === 404;
      if (lost) forgotten.add(1);
    }
    if (lost) {
      next = register();
      lost = next === null;
    }
    if (next === null) continue;
    body = next;
    count(body);
  }
  admitted.add(1);
  timeToAdmission.add(Date.now() - started);
  if (config.thinkTimeMs > 0) sleep(config.thinkTimeMs / 1000);
}

export { setup } from './lib/target.js';
export { handleSummary } from './lib/summary.js';
