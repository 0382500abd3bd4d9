// Ramp: the number of users follows STAGES ("5s:100,20s:200,5s:0"), each
// user calling /hello in a loop, as in the seeds' ramping k6 tests.
import * as env from './lib/env.js';
import { helloConfig, helloIteration, loadOptions } from './lib/hello.js';

const config = Object.assign(helloConfig(), { stages: env.stages('STAGES') });

export const options = loadOptions('ramp', {
  executor: 'ramping-vus',
  startVUs: 0,
  stages: config.stages,
  gracefulRampDown: config.gracefulStop,
  gracefulStop: config.gracefulStop,
});

export default helloIteration(config);

export { setup } from './lib/target.js';
export { handleSummary } from './lib/summary.js';
