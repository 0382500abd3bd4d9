// A k6 script of one's own (SCENARIO=path/to/script.js) runs unchanged: the
// runner loads it from a small generated entry module that re-exports it and
// wraps only what the results table needs:
//   - its iteration functions: lt_iterations_started, and the delivered-load
//     marks of delivered.js at each iteration's start and end (the script's
//     own requests are not wrapped, so these are iteration times);
//   - setup(): its requests are tagged traffic=setup, so they stay out of the
//     load's figures (the runner tags everything else traffic=load);
//   - options: the thresholds that make k6 report the load-only sub-metrics,
//     and one sub-metric per k6 error_code that splits failures by cause;
//   - the script's own options.tags, given to each VU's metrics as it
//     starts (setup's too): a --tag on k6's command line replaces them, and
//     where the command line cannot carry a value (k6-operator splits its
//     arguments at spaces) this is how they still arrive;
//   - k6/http's request functions (get, post, put, patch, del, head,
//     options, request), replaced on the module's shared default export
//     as this module is evaluated: each request of the load (not setup's)
//     is counted as it is sent and as it returns (delivered.js: one that
//     never returns was cut by the script's graceful stop or ramp-down
//     while it waited, fail_interrupted) and
//     carries the suite's request id (requestid.js), so the application's
//     access log is joined with k6's samples and each request split into
//     its parts (docs/time-parts.md), the script unchanged. A request the
//     script already gave an X-Request-Id keeps its own. What a script must
//     not do for it: import the functions by name (`import { get } from
//     'k6/http'`) or keep them aside at its top level (`const get =
//     http.get`): those are k6's own, unwrapped; asyncRequest and batch are
//     not wrapped either;
//   - handleSummary(): the full summary goes to SUMMARY_FILE, with the
//     fail_* counters the suite's own scenarios count themselves, whatever
//     the script's own handleSummary returns (which is kept), and the list
//     of what that returned to OUTPUTS_FILE, so the runner can tell a file
//     it asked for and k6 could not write (k6 only logs it).
import exec from 'k6/execution';
import http from 'k6/http';
import * as delivered from './delivered.js';
import { REQUEST_ID_HEADER, clearRequestId, withRequestId } from './requestid.js';
import { causeCodes } from './causes.js';
import { LOAD_THRESHOLDS, textLines } from './summary.js';

const codeMetric = (code) => `http_reqs{traffic:load,error_code:${code}}`;

// Whether this VU runs setup() (its requests carry no id: they are not the
// load).
let inSetup = false;

// The index of the params argument of each k6/http function wrapped.
const PARAMS_AT = { get: 1, head: 1, del: 2, options: 2, post: 2, put: 2, patch: 2, request: 3 };

// idParams(params): a copy of params with a new request id in its headers
// (the script's own object is not changed), or params itself when it has an
// id of its own.
function idParams(params) {
  const headers = (params && params.headers) || {};
  if (Object.keys(headers).some((name) => name.toLowerCase() === REQUEST_ID_HEADER.toLowerCase())) return params;
  return withRequestId(Object.assign({}, params || {}, { headers: Object.assign({}, headers) }));
}

// withIds(name, fn): k6/http's fn, each call of the load with a request id.
function withIds(name, fn) {
  const at = PARAMS_AT[name];
  return function (...args) {
    if (inSetup) return fn.apply(this, args);
    while (args.length < at) args.push(null);
    args[at] = idParams(args[at]);
    // Sent once its id is set (the counter's sample carries it); returned
    // when k6/http gives the request back, answered, failed or thrown. An
    // iteration cut while its request waits is never counted as returned:
    // k6 keeps no metric's sample once the VU's context is done
    // (metrics.PushIfNotDone), even if this finally runs.
    delivered.requestSent();
    try {
      return fn.apply(this, args);
    } finally {
      delivered.requestReturned();
      clearRequestId();
    }
  };
}

for (const name of Object.keys(PARAMS_AT)) {
  if (typeof http[name] === 'function') http[name] = withIds(name, http[name]);
}

// The script's own options.tags (options() keeps them), and whether this
// VU has them yet.
let ownTags = {};
let tagged = false;

// tagVu(): the script's own tags on this VU's metrics, once.
function tagVu() {
  if (tagged) return;
  tagged = true;
  for (const [name, value] of Object.entries(ownTags)) exec.vu.metrics.tags[name] = value;
}

// options(own): the script's options plus the suite's thresholds.
export function options(own) {
  ownTags = Object.assign({}, (own && own.tags) || {});
  const thresholds = Object.assign({}, LOAD_THRESHOLDS);
  for (const codes of Object.values(causeCodes())) {
    for (const code of codes) thresholds[codeMetric(code)] = ['count>=0'];
  }
  Object.assign(thresholds, (own && own.thresholds) || {});
  return Object.assign({}, own || {}, { thresholds });
}

// iteration(fn): fn, with the iteration's start and end recorded.
export function iteration(fn) {
  if (typeof fn !== 'function') return fn;
  return function (data) {
    tagVu();
    delivered.iterationStarted();
    delivered.started(Date.now());
    let result;
    try {
      result = fn(data);
    } catch (e) {
      delivered.ended(Date.now());
      throw e;
    }
    if (result && typeof result.then === 'function') {
      return result.finally(() => delivered.ended(Date.now()));
    }
    delivered.ended(Date.now());
    return result;
  };
}

// setup(fn): the script's setup (if any), its requests tagged traffic=setup.
export function setup(fn) {
  return function () {
    tagVu();
    delivered.declare();
    exec.vu.metrics.tags.traffic = 'setup';
    inSetup = true;
    return typeof fn === 'function' ? fn() : undefined;
  };
}

function counterOf(count) {
  return { type: 'counter', contains: 'default', values: { count, rate: 0 } };
}

// withCauses(data): the summary data with fail_* counters from the
// error_code sub-metrics; fail_other is whatever failed for another reason,
// so the six add up to the failed requests.
export function withCauses(data) {
  const metrics = Object.assign({}, data.metrics);
  const countOf = (name) => (metrics[name] ? metrics[name].values.count || 0 : 0);
  let counted = 0;
  for (const [cause, codes] of Object.entries(causeCodes())) {
    const count = codes.reduce((sum, code) => sum + countOf(codeMetric(code)), 0);
    metrics[cause] = counterOf(count);
    counted += count;
  }
  const failed = metrics['http_req_failed{traffic:load}'];
  const failedCount = failed ? failed.values.passes : 0;
  metrics.fail_other = counterOf(Math.max(failedCount - counted, 0));
  return Object.assign({}, data, { metrics });
}

// forScript(data): what the script's own handleSummary sees: its metrics,
// without the per-code sub-metrics the suite added.
function forScript(data) {
  const metrics = {};
  for (const [name, metric] of Object.entries(data.metrics)) {
    if (!name.includes('error_code:')) metrics[name] = metric;
  }
  return Object.assign({}, data, { metrics });
}

// summary(own): handleSummary: the script's own outputs (or the suite's few
// lines on stdout when it has no handleSummary), SUMMARY_FILE, and
// OUTPUTS_FILE: the files the script's own asked for, as a JSON array of
// its keys (stdout and stderr are no files). k6 writes a relative one
// from its working directory, which the runner makes the cell's.
export function summary(own) {
  return function (data) {
    const full = withCauses(data);
    const outputs = typeof own === 'function'
      ? Object.assign({}, own(forScript(data)) || {})
      : { stdout: textLines(full) };
    if (__ENV.OUTPUTS_FILE && typeof own === 'function') {
      const files = Object.keys(outputs).filter((key) => key !== 'stdout' && key !== 'stderr');
      outputs[__ENV.OUTPUTS_FILE] = JSON.stringify(files);
    }
    if (__ENV.SUMMARY_FILE) outputs[__ENV.SUMMARY_FILE] = JSON.stringify(full, null, 1);
    return outputs;
  };
}
