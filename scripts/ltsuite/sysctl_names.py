"""The kernel knobs of env/sysctls.tsv, (env key, sysctl), for what cannot read the table: the
doctor runs on a host with its script and ltsuite/ alone. Made by `make sysctls`
(ltsuite.sysctls names --write); tests/python/test_sysctls.py checks it is the table's."""

#: The server's namespace.
SERVER = (
    ('SOMAXCONN', 'net.core.somaxconn'),
    ('TCP_MAX_SYN_BACKLOG', 'net.ipv4.tcp_max_syn_backlog'),
    ('TCP_ABORT_ON_OVERFLOW', 'net.ipv4.tcp_abort_on_overflow'),
    ('TCP_SYNCOOKIES', 'net.ipv4.tcp_syncookies'),
    ('TCP_SYNACK_RETRIES', 'net.ipv4.tcp_synack_retries'),
    ('TCP_FIN_TIMEOUT', 'net.ipv4.tcp_fin_timeout'),
    ('TCP_TW_REUSE', 'net.ipv4.tcp_tw_reuse'),
    ('TCP_MAX_TW_BUCKETS', 'net.ipv4.tcp_max_tw_buckets'),
    ('TCP_KEEPALIVE_TIME', 'net.ipv4.tcp_keepalive_time'),
)
#: The users' (k6's) namespace.
CLIENT = (
    ('CLIENT_TCP_SYN_RETRIES', 'net.ipv4.tcp_syn_retries'),
    ('CLIENT_TCP_SYN_LINEAR_TIMEOUTS', 'net.ipv4.tcp_syn_linear_timeouts'),
    ('CLIENT_TCP_TW_REUSE', 'net.ipv4.tcp_tw_reuse'),
    ('CLIENT_IP_LOCAL_PORT_RANGE', 'net.ipv4.ip_local_port_range'),
    ('CLIENT_TCP_FIN_TIMEOUT', 'net.ipv4.tcp_fin_timeout'),
    ('CLIENT_TCP_MAX_TW_BUCKETS', 'net.ipv4.tcp_max_tw_buckets'),
)
