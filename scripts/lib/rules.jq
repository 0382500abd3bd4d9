# The rules that predict a cell's kernel and Tomcat figures from its knobs
# and the sysctls the cell recorded. One place, unit-tested
# (tests/unit/rules.bats); row.jq and design.jq include it with
# `include "rules";` (jq -L scripts/lib). Every rule names its source.

# k6 duration ("1m30s", "500ms") -> milliseconds.
def duration_ms:
  [scan("([0-9.]+)(ms|s|m|h)") | (.[0] | tonumber) * ({"ms": 1, "s": 1000, "m": 60000, "h": 3600000}[.[1]])]
  | add;

# SYN retransmission. Linux net/ipv4/tcp_timer.c: the first RTO is
# TCP_TIMEOUT_INIT (1 s); after retransmission k the RTO stays 1 s while
# k <= tcp_syn_linear_timeouts, otherwise it doubles (capped at TCP_RTO_MAX,
# 120 s). connect() gives up when the timer fires and the time since the
# first SYN has reached the classic model of tcp_syn_retries backoffs
# (tcp_model_timeout(): (2^(retries+1) - 1) s up to 6 retries, then 120 s
# more per retry), so linear timeouts add SYNs within the same time.
# Measured on kernel 6.18 (one client, a listener whose queue stays full):
#   retries 2, linear 0: SYNs 0 1 3, gives up at 7 s (2 retransmits)
#   retries 2, linear 4: SYNs 0 1 2 3 4 5, gives up at 7 s (5)
#   retries 3, linear 2: SYNs 0 1 2 3 5 9, gives up at 17 s (5)
#   retries 3, linear 4: SYNs 0 1 2 3 4 5 7 11, gives up at 19 s (7)
#   retries 4, linear 4: SYNs 0 1 2 3 4 5 7 11 19, gives up at 35 s (8)

# syn_model_timeout_s(retries): the give-up threshold of tcp_model_timeout().
def syn_model_timeout_s($retries):
  if $retries <= 6 then (pow(2; $retries + 1) - 1) else 127 + ($retries - 6) * 120 end;

# syn_timer_times(linear; until_s): times (s) the SYN timer fires, from 0 (the
# first SYN) up to the first one at or past until_s.
def syn_timer_times($linear; $until_s):
  [{t: 0, rto: 1, k: 0}
   | recurse(if .t >= $until_s then empty
             else {t: (.t + .rto), k: (.k + 1)}
                  | .rto = (if .k <= $linear then 1 else ([pow(2; .k - $linear), 120] | min) end)
             end)
   | .t];

# syn_send_times(retries; linear): when a client that never gets an answer
# sends its SYN and each retransmission.
def syn_send_times($retries; $linear):
  syn_model_timeout_s($retries) as $limit
  | [syn_timer_times($linear; $limit)[] | select(. < $limit)];

# syn_give_up_s(retries; linear): when connect() fails with ETIMEDOUT.
def syn_give_up_s($retries; $linear):
  syn_model_timeout_s($retries) as $limit | syn_timer_times($linear; $limit) | last;

# syns_within(retries; linear; window_s): SYNs a client sends before it gives
# up or its request times out at window_s, whichever comes first.
def syns_within($retries; $linear; $window_s):
  ([syn_give_up_s($retries; $linear), $window_s] | min) as $stop
  | [syn_send_times($retries; $linear)[] | select(. < $stop)] | length;

# listen_backlog(accept_count; somaxconn): listen() caps the backlog Tomcat
# asks for (acceptCount) at net.core.somaxconn (net/socket.c, __sys_listen).
def listen_backlog($accept_count; $somaxconn): [$accept_count, $somaxconn] | min;

# server_capacity(max_connections; accept_count; somaxconn): established
# connections the server holds at saturation: Tomcat accepts max-connections,
# and the accept queue holds backlog + 1, because sk_acceptq_is_full()
# (include/net/sock.h) tests "queue length > backlog", not ">=".
def server_capacity($max_connections; $accept_count; $somaxconn):
  $max_connections + listen_backlog($accept_count; $somaxconn) + 1;

# capacity_slack(cpus): how many more than server_capacity a saturated
# server may hold: the queue-full check runs without a lock, so handshakes
# completing at the same instant on different CPUs can each pass it
# (measured here: 9 of 400 bursts on 2 CPUs left backlog + 2 in the queue).
def capacity_slack($cpus): [$cpus - 1, 0] | max;

# waves(users; workers; delay_ms): the latest answer when `users` requests
# that each take delay_ms arrive at once and `workers` threads serve them in
# order: ceil(users / workers) waves (seed 003: 3000 users, 200 threads,
# 5 s -> 15 waves, 75 s).
def waves_ms($users; $workers; $delay_ms):
  if $users <= 0 or $workers <= 0 then null
  else ((($users + $workers - 1) / $workers) | floor) * $delay_ms end;

# closed_tps(users; workers; delay_ms; think_ms): throughput of users that
# each wait for their answer, then think: the thread pool is the limit once
# users exceed it (Little's law: workers / delay), else users / (delay + think).
def closed_tps($users; $workers; $delay_ms; $think_ms):
  if $delay_ms <= 0 then null
  elif $users > $workers then $workers * 1000 / $delay_ms
  else $users * 1000 / ($delay_ms + $think_ms) end;
