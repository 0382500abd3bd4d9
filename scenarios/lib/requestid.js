// Each request's id, so the application's own account of a request (Tomcat's
// access log, %{X-Request-Id}i) can be set beside k6's: sent as the
// X-Request-Id header and kept in k6's samples as metadata (k6's
// exec.vu.metrics.metadata: written with every sample of the request in
// --out json, never a tag, so it adds no time series to InfluxDB).
//
// The id is <vu>-<iteration>-<n> (<user>-... when a VU carries several
// users: withUserRequestId): k6's VU id in the whole test (unique
// across the k6 processes of a cell, exec.vu.idInTest), the VU's iteration
// (__ITER) and the VU's n-th request. Per VU this keeps a counter and two
// references; per request it costs about 1.5 us of k6's CPU (reading
// exec.vu costs 8 us a time, so it is read once per VU).
//
// A script of one's own sends it with one line (docs/time-parts.md):
//   http.get(url, withRequestId(params))
// after `import { withRequestId } from '<suite>/scenarios/lib/requestid.js'`.
import exec from 'k6/execution';

export const REQUEST_ID_HEADER = 'X-Request-Id';
// The metadata key scripts/ltsuite/timeparts.py joins on.
export const REQUEST_ID_KEY = 'rid';

// Module state is per VU: its id's prefix and its metadata, read on the
// first request (exec.vu is not there in the init context).
let prefix = null;
let metadata = null;
let sent = 0;

// withRequestId(params): params (k6/http's; a new object when none) with a
// new id in its headers (set in place: the next call sets the next one), and
// the id in the metadata of the samples k6 records from now until
// clearRequestId().
export function withRequestId(params) {
  if (prefix === null) {
    const vu = exec.vu;
    prefix = `${vu.idInTest}-`;
    metadata = vu.metrics.metadata;
  }
  sent += 1;
  return setRequestId(params, `${prefix}${__ITER}-${sent}`);
}

// withUserRequestId(params, user, iteration, n): the same for one of the
// users a VU carries (USERS_PER_VU > 1): the id is <user>-<iteration>-<n>,
// the user's number in the whole test in place of the VU's. Call it right
// before the request: k6 takes the metadata as the request is made, and the
// next user's request sets its own.
export function withUserRequestId(params, user, iteration, n) {
  if (metadata === null) metadata = exec.vu.metrics.metadata;
  return setRequestId(params, `${user}-${iteration}-${n}`);
}

function setRequestId(params, id) {
  metadata[REQUEST_ID_KEY] = id;
  const given = params || {};
  if (!given.headers) given.headers = {};
  given.headers[REQUEST_ID_HEADER] = id;
  return given;
}

// clearRequestId(): samples recorded after the request (the suite's own
// metrics) do not carry its id.
export function clearRequestId() {
  if (metadata !== null) delete metadata[REQUEST_ID_KEY];
}
