// Parameters come from the environment (the runner passes every knob of the
// cell). Each getter fails with the key's name, so a bad value is reported
// before any load starts.

export function required(key) {
  const value = __ENV[key];
  if (value === undefined || value === '') {
    throw new Error(`${key}: missing (set it in env/defaults.env or the matrix)`);
  }
  return value;
}

export function str(key, fallback) {
  const value = __ENV[key];
  if (value === undefined || value === '') {
    if (fallback === undefined) return required(key);
    return fallback;
  }
  return value;
}

// A whole number in decimal: 0, or digits without a leading zero (as
// scripts/lib/envfile.sh's envfile_is_number: bash would read 010 as eight).
const NUMBER = /^(0|[1-9][0-9]*)$/;

export function int(key, fallback, min = 0) {
  const raw = str(key, fallback === undefined ? undefined : String(fallback));
  if (!NUMBER.test(raw) || Number(raw) < min) {
    throw new Error(`${key}: '${raw}' is not a whole number >= ${min}`
      + (/^0[0-9]+$/.test(raw) ? ` (a leading zero reads as octal: write ${Number(raw)})` : ''));
  }
  return Number(raw);
}

export function bool(key, fallback) {
  const raw = str(key, fallback === undefined ? undefined : (fallback ? '1' : '0'));
  if (raw !== '0' && raw !== '1') throw new Error(`${key}: '${raw}' is not 0 or 1`);
  return raw === '1';
}

// A path and query on the target (type "urlpath" in env/defaults.env:
// TARGET_PATH), as scripts/lib/envfile.sh's envfile_check_type: from /, no
// space, control character or #.
const URL_PATH = /^\/[^\s#\x00-\x1f\x7f]*$/;

export function urlPath(key, fallback) {
  const raw = str(key, fallback);
  if (raw !== '' && !URL_PATH.test(raw)) {
    throw new Error(`${key}: '${raw}' is not a path on the target (it starts with /, has no space or #), such as /owners?lastName=`);
  }
  return raw;
}

const DURATION = /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/;

export function duration(key, fallback) {
  const raw = str(key, fallback);
  if (!DURATION.test(raw)) throw new Error(`${key}: '${raw}' is not a duration such as 10s`);
  return raw;
}

// positiveDuration(key): a duration that cannot be zero (type "duration>0" in
// env/defaults.env: DURATION, REQUEST_TIMEOUT, TIME_UNIT).
export function positiveDuration(key, fallback) {
  const raw = duration(key, fallback);
  if (!/[1-9]/.test(raw)) throw new Error(`${key}: '${raw}' is zero: it must be a duration > 0 such as 1s`);
  return raw;
}

const UNIT_MS = { ms: 1, s: 1000, m: 60000, h: 3600000 };

// durationMs(key): a duration knob in milliseconds (for timers); positive:
// as positiveDuration.
export function durationMs(key, fallback, positive = false) {
  const raw = positive ? positiveDuration(key, fallback) : duration(key, fallback);
  let total = 0;
  for (const [, number, unit] of raw.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g)) {
    total += Number(number) * UNIT_MS[unit];
  }
  return total;
}

// stages("STAGES") parses "5s:100,20s:200,5s:0" into k6 ramping stages.
export function stages(key, fallback) {
  const raw = str(key, fallback);
  return raw.split(',').map((stage) => {
    const match = /^(.+):([0-9]+)$/.exec(stage);
    if (!match || !DURATION.test(match[1])) {
      throw new Error(`${key}: stage '${stage}' of '${raw}' is not DURATION:TARGET (e.g. 5s:100)`);
    }
    return { duration: match[1], target: Number(match[2]) };
  });
}

// Tags every sample carries, so a run and a cell can be picked out later.
// traffic=load marks the measured requests; setup() overrides it.
export function runTags(scenario) {
  return {
    run_id: str('RUN_ID', 'adhoc'),
    cell: str('CELL_ID', 'adhoc'),
    scenario,
    traffic: 'load',
  };
}
