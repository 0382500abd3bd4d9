// Made from scripts/ltsuite/causes.tsv by `PYTHONPATH=scripts python3 -m ltsuite.causes js
// >scenarios/lib/causes-table.js`: edit the table, not this file. One rule a line, in
// the table's order: the first that matches a request gives its cause; null matches
// any value, error any message that contains it.
export const RULES = [
  { cause: "answered", status: [200, 399], errorCode: null, error: "" },
  { cause: "no_fd", status: null, errorCode: [1200, 1299], error: "too many open files" },
  { cause: "connect", status: null, errorCode: [1210, 1219], error: "" },
  { cause: "reset", status: null, errorCode: [1220, 1220], error: "" },
  { cause: "tls", status: null, errorCode: [1300, 1399], error: "" },
  { cause: "timeout", status: null, errorCode: [1050, 1050], error: "" },
  { cause: "http_4xx", status: [400, 499], errorCode: null, error: "" },
  { cause: "http_5xx", status: [500, 599], errorCode: null, error: "" },
  { cause: "other", status: null, errorCode: null, error: "" },
  { cause: "interrupted", status: null, errorCode: null, error: "" },
];
