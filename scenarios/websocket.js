// WebSocket sessions (seed 002): each iteration is one session. It opens
// ws://TARGET/ws, sends WS_MESSAGES text messages (each a job of WS_WORK_MS
// on the server; the next goes WS_THINK_MS after the reply), then closes.
// Every VU runs WS_SESSIONS_PER_VU sessions, one after the other.
//
// Trends: ws_connect (new WebSocket() to the open event), ws_message (send
// to reply), ws_close (close() to the close event, i.e. until the server's
// close frame came back). A session that does not end cleanly counts once,
// by its first cause: ws_fail_refused (the handshake failed: refused, reset,
// or an answer other than 101), ws_fail_handshake_timeout, ws_fail_abnormal_close
// (the server closed first, or with a code other than 1000/1001, or the
// connection broke), ws_fail_timeout (no reply or no close frame within
// REQUEST_TIMEOUT). ws_sessions (k6's own count of sessions started) =
// ws_sessions_ok + the failures.
//
// Times have millisecond resolution: the script's clock is Date.now(), the
// events carry k6's timestamps.
import { WebSocket } from 'k6/websockets';
import { setTimeout, clearTimeout } from 'k6/timers';
import { sleep } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import * as env from './lib/env.js';
import { LOAD_THRESHOLDS, TREND_STATS, writeSummary } from './lib/summary.js';
import * as delivered from './lib/delivered.js';

const config = {
  targetUrl: env.required('TARGET_URL'),
  vus: env.int('VUS', undefined, 1),
  sessionsPerVu: env.int('WS_SESSIONS_PER_VU', undefined, 1),
  messages: env.int('WS_MESSAGES', undefined, 0),
  thinkMs: env.int('WS_THINK_MS', 0),
  timeoutMs: env.durationMs('REQUEST_TIMEOUT', undefined, true),
  duration: env.positiveDuration('DURATION'),
  gracefulStop: env.duration('GRACEFUL_STOP'),
  sampleIntervalS: env.int('SAMPLE_INTERVAL', 1, 1),
};
const url = `${config.targetUrl.replace(/^http/, 'ws').replace(/\/$/, '')}/ws`;

const connectTime = new Trend('ws_connect', true);
const messageTime = new Trend('ws_message', true);
const closeTime = new Trend('ws_close', true);
const sessionsOk = new Counter('ws_sessions_ok');
const failures = {
  refused: new Counter('ws_fail_refused'),
  handshake_timeout: new Counter('ws_fail_handshake_timeout'),
  abnormal_close: new Counter('ws_fail_abnormal_close'),
  timeout: new Counter('ws_fail_timeout'),
};

export const options = {
  scenarios: {
    websocket: {
      executor: 'per-vu-iterations',
      vus: config.vus,
      iterations: config.sessionsPerVu,
      maxDuration: config.duration,
      gracefulStop: config.gracefulStop,
    },
  },
  summaryTrendStats: TREND_STATS,
  // Never fail; they make the summary carry these even when nothing was added
  // (and the load's HTTP figures 0, not the setup() health check's).
  thresholds: Object.assign({}, LOAD_THRESHOLDS,
    { ws_connect: ['max>=0'], ws_message: ['max>=0'], ws_close: ['max>=0'], ws_sessions: ['count>=0'] }),
  tags: env.runTags('websocket'),
};

// handshakeCause(error): why a session never opened, from k6's error text.
function handshakeCause(error) {
  return /timeout|timed out|deadline exceeded/i.test(String(error)) ? 'handshake_timeout' : 'refused';
}

// The delivered-load markers (lib/delivered.js) take a session for a
// request: a VU has started when its first session starts, and the load
// window ends with the last session's close event.
export default function () {
  delivered.iterationStarted();
  const startedAt = Date.now();
  delivered.started(startedAt);
  const ws = new WebSocket(url);
  let opened = false;
  let sent = 0;
  let sentAt = 0;
  let closeAt = null;
  let failed = null;
  let timer = null;

  const fail = (cause, detail) => {
    if (failed !== null) return;
    failed = cause;
    // The detail is logged, not tagged: error texts carry ports, and a tag
    // per text would make a series per failure.
    console.warn(`ws session failed (${cause}): ${String(detail).slice(0, 200)}`);
    failures[cause].add(1);
  };
  // A reply or the close frame must come within REQUEST_TIMEOUT. Without a
  // close frame k6 keeps the session until the scenario's graceful stop.
  const expect = (what) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      fail('timeout', what);
      ws.close();
    }, config.timeoutMs);
  };
  const next = () => {
    if (sent === config.messages) {
      closeAt = Date.now();
      ws.close();
      expect('close');
      return;
    }
    sent += 1;
    sentAt = Date.now();
    ws.send(`job ${sent}`);
    expect('reply');
  };

  ws.onopen = (event) => {
    opened = true;
    connectTime.add(event.timestamp - startedAt);
    next();
  };
  ws.onmessage = (event) => {
    // A reply after the timeout fired belongs to a session already failed
    // and closing: nothing more is measured or sent.
    if (failed !== null) return;
    clearTimeout(timer);
    messageTime.add(event.timestamp - sentAt);
    if (config.thinkMs > 0) {
      timer = setTimeout(next, config.thinkMs);
    } else {
      next();
    }
  };
  ws.onerror = (event) => {
    fail(opened ? 'abnormal_close' : handshakeCause(event.error), event.error);
  };
  ws.onclose = (event) => {
    clearTimeout(timer);
    delivered.ended(event.timestamp);
    const code = event.code === undefined ? 'none' : event.code;
    if (opened && closeAt === null) fail('abnormal_close', `server closed first (${code})`);
    if (code !== 1000 && code !== 1001) fail(opened ? 'abnormal_close' : 'refused', `close code ${code}`);
    if (failed !== null) return;
    closeTime.add(event.timestamp - closeAt);
    sessionsOk.add(1);
  };
}

// A closed connection stays in TIME-WAIT for 60 s on the side that closed
// first, but the sampler stops with k6: waiting two sample intervals lets it
// count the TIME-WAITs of the last sessions too (scripts/lib/k6.sh counts
// this wait in the cell's time limit).
export function teardown() {
  sleep(2 * config.sampleIntervalS);
}

export { setup } from './lib/target.js';
export { handleSummary } from './lib/summary.js';
