// Burst: VUS users at one instant, each sending REQUESTS_PER_VU requests to
// /hello. k6 creates every VU first; setup() then fixes one start time,
// BURST_LEAD_MS ahead, and every VU waits for it before its first request
// (a start barrier), so the first requests leave together instead of over
// the seconds k6 needs to start its VUs one by one (with K6_INSTANCES > 1
// the instant is BURST_LEAD_MS after the processes start, so the lead must
// also cover creating the VUs). DURATION bounds the
// whole burst (k6's maxDuration, counted from the start, lead included).
// A VU carries USERS_PER_VU users (the suite resolves auto for the cell,
// scripts/ltsuite/rules.py users_per_vu): with more than one, each VU runs
// one iteration in which its users send their requests side by side
// (hello.js helloUsers); 1 is a VU per user.
import { sleep } from 'k6';
import * as env from './lib/env.js';
import { helloConfig, helloIteration, helloUsers, loadOptions } from './lib/hello.js';
import { checkTargetUp } from './lib/target.js';

const config = Object.assign(helloConfig(), {
  vus: env.int('VUS', undefined, 1),
  requestsPerVu: env.int('REQUESTS_PER_VU', undefined, 1),
  duration: env.positiveDuration('DURATION'),
  leadMs: env.int('BURST_LEAD_MS', undefined, 0),
  usersPerVu: env.int('USERS_PER_VU', 1, 1),
});
// A user of the burst leaves after its last request.
config.lastIteration = config.requestsPerVu - 1;

// A VU's users share its HTTP client (Go's Transport), which hands a
// connection that comes up to whichever request of the VU still waits, not
// to the one that dialled it: a user whose SYN met a full queue would then
// be served by another user's connection, and fail (or not) in its place.
// Users of one request each never reuse a connection (Connection: close),
// and without reuse (k6's noConnectionReuse: the Transport's
// DisableKeepAlives) a request waits only for its own dial.
const ownConnections = config.usersPerVu > 1 && config.requestsPerVu === 1;

export const options = loadOptions('burst', {
  executor: 'per-vu-iterations',
  vus: Math.ceil(config.vus / config.usersPerVu),
  iterations: config.usersPerVu === 1 ? config.requestsPerVu : 1,
  maxDuration: config.duration,
  gracefulStop: config.gracefulStop,
}, ownConnections ? { noConnectionReuse: true } : {});

// Several k6 processes sharing one burst (K6_INSTANCES) get one absolute
// start instant from the runner instead: BURST_START_AT, epoch ms.
const sharedStart = env.int('BURST_START_AT', 0);

export function setup() {
  checkTargetUp(config.targetUrl);
  return { startAt: sharedStart > 0 ? sharedStart : Date.now() + config.leadMs };
}

// Only the first iteration of a VU waits: the barrier releases the burst,
// later requests of the VU follow its own answers.
config.barrier = (data) => {
  if (__ITER !== 0) return;
  const wait = data.startAt - Date.now();
  if (wait > 0) sleep(wait / 1000);
};

export default config.usersPerVu === 1 ? helloIteration(config) : helloUsers(config);

export { handleSummary } from './lib/summary.js';
