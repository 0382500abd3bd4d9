// Each request's id, so the application's own account of a request (Tomcat's
// access log, %{X-Request-Id}i) can be set beside k6's: sent as the
// X-Request-Id header and kept in k6's samples as metadata (k6's
// exec.vu.metrics.metadata: written with every sample of the request in
// --out json, never a tag, so it adds no time series to InfluxDB).
//
// The id is <vu>-<iteration>-<n>: k6's VU id in the whole test (unique
// across the k6 processes of a cell, exec.vu.idInTest), the VU's iteration
// (__ITER) and the VU's n-th request. Per VU this costs one counter.
//
// A script of one's own sends it with one line (docs/time-parts.md):
//   http.get(url, withRequestId(params))
// after `import { withRequestId } from '<suite>/scenarios/lib/requestid.js'`.
import exec from 'k6/execution';

export const REQUEST_ID_HEADER = 'X-Request-Id';
// The metadata key scripts/ltsuite/timeparts.py joins on.
export const REQUEST_ID_KEY = 'rid';

// Module state is per VU.
let sent = 0;

// withRequestId(params): a copy of the request's params (k6/http's) with
// a new id in its headers; the id is also the metadata of the samples k6
// records from now until clearRequestId().
export function withRequestId(params) {
  sent += 1;
  const id = `${exec.vu.idInTest}-${__ITER}-${sent}`;
  exec.vu.metrics.metadata[REQUEST_ID_KEY] = id;
  const given = params || {};
  const headers = Object.assign({}, given.headers, { [REQUEST_ID_HEADER]: id });
  return Object.assign({}, given, { headers });
}

// clearRequestId(): samples recorded after the request (the suite's own
// metrics) do not carry its id.
export function clearRequestId() {
  delete exec.vu.metrics.metadata[REQUEST_ID_KEY];
}
