// Keep-alive and TIME_WAIT: each user sends REQUESTS_PER_VU requests, with
// connection reuse on or off. Whoever closes a connection first holds its
// TIME_WAIT. CONNECTION_REUSE=0 alone is k6's noConnectionReuse: requests
// say "Connection: close" and the server closes first. With CLIENT_CLOSES=1
// instead, every iteration opens a new connection and k6 closes it
// (noVUConnectionReuse), so the client holds TIME_WAIT; with a narrow client
// port range and no TIME_WAIT reuse, connects then fail with "cannot assign
// requested address" (counted in fail_connect).
import * as env from './lib/env.js';
import { helloConfig, helloIteration, loadOptions } from './lib/hello.js';

const config = Object.assign(helloConfig(), {
  vus: env.int('VUS', undefined, 1),
  requestsPerVu: env.int('REQUESTS_PER_VU', undefined, 1),
  connectionReuse: env.bool('CONNECTION_REUSE'),
  clientCloses: env.bool('CLIENT_CLOSES'),
  duration: env.positiveDuration('DURATION'),
});

export const options = loadOptions('keepalive', {
  executor: 'per-vu-iterations',
  vus: config.vus,
  iterations: config.requestsPerVu,
  maxDuration: config.duration,
  gracefulStop: config.gracefulStop,
}, {
  noConnectionReuse: !config.connectionReuse && !config.clientCloses,
  noVUConnectionReuse: !config.connectionReuse && config.clientCloses,
});

export default helloIteration(config);

export { setup } from './lib/target.js';
export { handleSummary } from './lib/summary.js';
