// Delivered load: what k6 really did, recorded beside what the scenario asked
// for, so a cell can tell whether it ran as designed. Per VU this costs one
// boolean; per request two clock reads.
//   lt_iterations_started  Counter  iterations begun (k6's own `iterations`
//                                   counts only completed ones)
//   lt_vu_first_request    Trend    one value per VU (per user, when a VU
//                                   carries several): when (epoch ms) its first
//                                   request started; count = VUs that sent one,
//                                   max - min = how spread the "spike" was
//   lt_request_end         Gauge    when (epoch ms) a request ended; its max is
//                                   the end of the load window
//   lt_users_started       Counter  users (VUs, or users a VU carries) whose
//                                   first request started: the count the live
//                                   line reads while the cell runs (k6's API
//                                   gives a trend's percentiles, not its count)
import { Counter, Gauge, Trend } from 'k6/metrics';

const iterationsStarted = new Counter('lt_iterations_started');
const firstRequest = new Trend('lt_vu_first_request');
const requestEnd = new Gauge('lt_request_end');
const usersStarted = new Counter('lt_users_started');

// Module state is per VU: each VU has its own copy of this flag.
let sentFirst = false;

// declare(): call in setup(), so the counter exists (as 0) even when no
// iteration ever starts; a missing metric then means "not measured".
export function declare() {
  iterationsStarted.add(0);
  usersStarted.add(0);
}

export function iterationStarted() {
  iterationsStarted.add(1);
}

// started(at) / ended(at): a request (or, for a script of one's own, an
// iteration) started or ended at epoch ms AT.
export function started(at) {
  if (!sentFirst) {
    sentFirst = true;
    firstRequest.add(at);
    usersStarted.add(1);
  }
}

// userStarted(at): the first request of one of the users a VU carries
// (USERS_PER_VU > 1) started at epoch ms AT: lt_vu_first_request then
// counts users, one value each, as it counts VUs of one user.
export function userStarted(at) {
  firstRequest.add(at);
  usersStarted.add(1);
}

export function ended(at) {
  requestEnd.add(at);
}

// send(request): run request() (one HTTP call) and note its start and end.
// The first request is noted before it is sent: a request that never ends
// (cut off by the graceful stop) still counts its VU as started.
export function send(request) {
  started(Date.now());
  const res = request();
  ended(Date.now());
  return res;
}
