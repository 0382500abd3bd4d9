// Delivered load: what k6 really did, recorded beside what the scenario asked
// for, so a cell can tell whether it ran as designed. Per VU this costs one
// boolean; per request two clock reads.
//   lt_iterations_started  Counter  iterations begun (k6's own `iterations`
//                                   counts only completed ones); a user's
//                                   request is its iteration when a VU
//                                   carries several users
//   lt_user_iterations     Counter  those users' iterations that ended (k6's
//                                   `iterations` counts the VU's one)
//   lt_vu_first_request    Trend    one value per VU (per user, when a VU
//                                   carries several): when (epoch ms) its first
//                                   request started; count = VUs that sent one,
//                                   max - min = how spread the "spike" was;
//                                   the live line counts its points
//   lt_request_end         Gauge    when (epoch ms) a request ended; its max is
//                                   the end of the load window
import { Counter, Gauge, Trend } from 'k6/metrics';

const iterationsStarted = new Counter('lt_iterations_started');
const userIterations = new Counter('lt_user_iterations');
const firstRequest = new Trend('lt_vu_first_request');
const requestEnd = new Gauge('lt_request_end');

// Module state is per VU: each VU has its own copy of this flag.
let sentFirst = false;

// declare(): call in setup(), so the counter exists (as 0) even when no
// iteration ever starts; a missing metric then means "not measured".
export function declare() {
  iterationsStarted.add(0);
}

// iterationStarted(n): n iterations (1 unless given) began.
export function iterationStarted(n = 1) {
  iterationsStarted.add(n);
}

// userIterationEnded(): one of the users a VU carries ended an iteration
// (its request was answered or failed).
export function userIterationEnded() {
  userIterations.add(1);
}

// started(at) / ended(at): a request (or, for a script of one's own, an
// iteration) started or ended at epoch ms AT.
export function started(at) {
  if (!sentFirst) {
    sentFirst = true;
    firstRequest.add(at);
  }
}

// userStarted(at): the first request of one of the users a VU carries
// (USERS_PER_VU > 1) started at epoch ms AT: lt_vu_first_request then
// counts users, one value each, as it counts VUs of one user.
export function userStarted(at) {
  firstRequest.add(at);
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
