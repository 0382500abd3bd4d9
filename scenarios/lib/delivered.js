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
//   lt_requests_sent       Counter  load requests handed to k6/http, each
//                                   added as k6 is asked (its sample carries
//                                   the request's id, requestid.js)
//   lt_requests_returned   Counter  those k6/http gave back (an answer or a
//                                   failure). A request sent and never
//                                   returned was cut, with its iteration, by
//                                   the graceful stop or ramp-down while it
//                                   waited: k6 records nothing for it (no
//                                   sample once the VU's context is done), so
//                                   the row counts it from these two
//                                   (fail_interrupted)
import { Counter, Gauge, Trend } from 'k6/metrics';

const iterationsStarted = new Counter('lt_iterations_started');
const userIterations = new Counter('lt_user_iterations');
const firstRequest = new Trend('lt_vu_first_request');
const requestEnd = new Gauge('lt_request_end');
const requestsSent = new Counter('lt_requests_sent');
const requestsReturned = new Counter('lt_requests_returned');

// Module state is per VU: each VU has its own copy of this flag.
let sentFirst = false;

// declare(): call in setup(), so the counters exist (as 0) even when no
// iteration ever starts; a missing metric then means "not measured".
export function declare() {
  iterationsStarted.add(0);
  requestsSent.add(0);
  requestsReturned.add(0);
}

// requestSent() / requestReturned(): a load request is handed to k6/http
// (call it after its id is set, so the sample carries it) / k6/http gave
// it back.
export function requestSent() {
  requestsSent.add(1);
}

export function requestReturned() {
  requestsReturned.add(1);
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

// send(request): run request() (one HTTP call) and note its start, that it
// was sent and returned, and its end. The first request is noted before it
// is sent: a request that never ends (cut off by the graceful stop) still
// counts its VU as started. Set the request's id before (withRequestId), so
// lt_requests_sent's sample carries it.
export function send(request) {
  started(Date.now());
  requestsSent.add(1);
  const res = request();
  requestsReturned.add(1);
  ended(Date.now());
  return res;
}
