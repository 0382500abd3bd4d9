import http from 'k6/http';
import { declare } from './delivered.js';
import * as env from './env.js';

const healthPath = env.str('TARGET_HEALTH_PATH', '/health');

// setup(): the setup() of every scenario that needs nothing more than the
// target up (re-exported by each: export { setup } from './lib/target.js').
export function setup() {
  checkTargetUp(env.required('TARGET_URL'));
}

// checkTargetUp fails setup() with a message an operator can act on.
// It also declares the delivered-load metrics (every scenario calls it from setup()).
export function checkTargetUp(targetUrl) {
  declare();
  // The suite's runner has just waited for the health path (TARGET_CHECKED=1):
  // asked again from here, the check's connection would hold one of the
  // users' ephemeral ports towards the target (TIME-WAIT, 60 s) through the load.
  if (env.str('TARGET_CHECKED', '') === '1') return;
  // Connection: close, so this check does not keep one of Tomcat's
  // max-connections busy (idle keep-alive) while the test runs.
  const res = http.get(`${targetUrl}${healthPath}`, {
    timeout: '5s',
    headers: { Connection: 'close' },
    tags: { name: 'health', traffic: 'setup' },
  });
  if (res.status !== 200) {
    throw new Error(`target ${targetUrl} is not up: GET ${healthPath} gave status ${res.status} ` +
      `${res.error || ''}; start it (make run-matrix does) or fix TARGET_URL`);
  }
}
