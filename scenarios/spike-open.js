// Open-model spike: requests arrive at RATE per TIME_UNIT whatever the server
// does, so a slow server shows up as latency and dropped iterations instead
// of being hidden by users who wait (coordinated omission).
import * as env from './lib/env.js';
import { helloConfig, helloIteration, loadOptions } from './lib/hello.js';

const config = Object.assign(helloConfig(), {
  rate: env.int('RATE', undefined, 1),
  timeUnit: env.positiveDuration('TIME_UNIT'),
  duration: env.positiveDuration('DURATION'),
  preAllocatedVUs: env.int('PRE_ALLOCATED_VUS', undefined, 1),
  maxVUs: env.int('MAX_VUS', undefined, 1),
  // A user of the open model does not think: arrivals are the rate.
  thinkTimeMs: 0,
});
if (config.maxVUs < config.preAllocatedVUs) {
  throw new Error(`MAX_VUS (${config.maxVUs}) must be >= PRE_ALLOCATED_VUS (${config.preAllocatedVUs})`);
}

export const options = loadOptions('spike-open', {
  executor: 'constant-arrival-rate',
  rate: config.rate,
  timeUnit: config.timeUnit,
  duration: config.duration,
  preAllocatedVUs: config.preAllocatedVUs,
  maxVUs: config.maxVUs,
  gracefulStop: config.gracefulStop,
});

export default helloIteration(config);

export { setup } from './lib/target.js';
export { handleSummary } from './lib/summary.js';
