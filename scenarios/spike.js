// Spike: VUS users at once for DURATION, each calling /hello in a loop.
// The closed model of the seeds: a user waits for its answer before the next
// request, so a full server slows the users down instead of piling up work.
import * as env from './lib/env.js';
import { helloConfig, helloIteration, loadOptions } from './lib/hello.js';

const config = Object.assign(helloConfig(), {
  vus: env.int('VUS', undefined, 1),
  duration: env.positiveDuration('DURATION'),
});

export const options = loadOptions('spike', {
  executor: 'constant-vus',
  vus: config.vus,
  duration: config.duration,
  gracefulStop: config.gracefulStop,
});

export default helloIteration(config);

export { setup } from './lib/target.js';
export { handleSummary } from './lib/summary.js';
