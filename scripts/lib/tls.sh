# shellcheck shell=bash
# Summary: HTTPS at the target (TARGET_TLS): a key and a self-signed
# certificate made per run, in the run directory, with the JDK's keytool;
# Spring Boot's own server.ssl.* properties that serve them; and the
# certificate as the only root the users' tools trust (k6 and curl), so a
# handshake is verified, never skipped.
#
#   tls_knob_problems ORIGINS VALUES  refusals before anything starts
#   tls_cell_prepare CELL [DIR]       the cell's key (made once per run and key
#                                     type), TLS_CERT_FILE and curl's CA, for
#                                     TARGET_TLS=1 or nginx with PROXY_TLS=1
#   tls_spring_env CELL               SERVER_SSL_* lines for target_spring_env
#   tls_copy_calibration CELL_DIR     the newest make tls-calibrate into the cell
#
# Needs common.sh and the run's LT_RUN_DIR.

# The certificate the users trust in the current cell (a PEM file in the run
# directory), empty when the cell is plain HTTP. k6_cell_env gives it to k6
# as SSL_CERT_FILE: k6 is Go, and Go on Linux takes its root pool from that
# file alone when it is set.
TLS_CERT_FILE=""
# The alias of the key in the keystore.
readonly TLS_ALIAS=ltsuite
# keytool's key for each TLS_KEY: an ECDSA P-256 key or an RSA 2048-bit one
# (the sizes browsers and load balancers use by default).
declare -grA TLS_KEYTOOL_ARGS=(
  [ec]="-keyalg EC -groupname secp256r1"
  [rsa]="-keyalg RSA -keysize 2048"
)

# tls_wanted CELL_ASSOC: succeed when the cell serves HTTPS at the target.
tls_wanted() {
  local -n tw_values="$1"
  [[ "${tw_values[TARGET_TLS]:-0}" == 1 ]]
}

# tls_users_wanted CELL_ASSOC: succeed when the users meet TLS: at the
# target (TARGET_TLS=1) or at nginx in front (PROXY=nginx, PROXY_TLS=1).
tls_users_wanted() {
  local -n tu_values="$1"
  [[ "${tu_values[TARGET_TLS]:-0}" == 1 ]] \
    || [[ "${tu_values[PROXY]:-none}" == nginx && "${tu_values[PROXY_TLS]:-0}" == 1 ]]
}

# tls_knob_problems ORIGINS_ASSOC VALUES_ASSOC: "WHERE: KEY: why", one a
# line, for TLS knobs the suite cannot honour: TARGET_TLS=1 (an axis
# included) with a server that is not Spring Boot (TARGET_CMD), a target it
# does not start (TARGET_URL: its scheme says), a container (BACKEND=compose)
# or nginx in front (its upstream is plain HTTP); a TLS_KEY keytool has no
# key for.
tls_knob_problems() {
  local -n to_origin="$1" to_value="$2"
  local where="${to_origin[TARGET_TLS]:-defaults}" key
  for key in ${to_value[TLS_KEY]:-ec}; do
    [[ -n "${TLS_KEYTOOL_ARGS[$key]:-}" ]] \
      || printf "%s: TLS_KEY: '%s' is not a key type the suite makes (ec or rsa)\n" "${to_origin[TLS_KEY]:-defaults}" "$key"
  done
  [[ " ${to_value[TARGET_TLS]:-0} " == *" 1 "* ]] || return 0
  if [[ " ${to_value[TLS_SESSION_RESUMPTION]:-1} " == *" 0 "* ]]; then
    printf "%s: TLS_SESSION_RESUMPTION: '0' with TARGET_TLS=1 (%s): Spring Boot's server.ssl.* has no property that turns Tomcat's session cache or tickets off (JSSE keeps both on), so the suite cannot honour it without code; use 1, or nginx in front (PROXY=nginx PROXY_TLS=1), where it is ssl_session_cache and ssl_session_tickets\n" \
      "${to_origin[TLS_SESSION_RESUMPTION]:-defaults}" "$where"
  fi
  if [[ -n "${to_value[TARGET_CMD]:-}" ]]; then
    printf "%s: TARGET_TLS: HTTPS is set up as Spring Boot's server.ssl.* properties, but TARGET_CMD (%s) starts a server that is not Spring Boot; remove TARGET_TLS or TARGET_CMD\n" \
      "$where" "${to_origin[TARGET_CMD]:-defaults}"
  elif [[ -n "${to_value[TARGET_URL]:-}" ]]; then
    printf "%s: TARGET_TLS: the suite starts no target when TARGET_URL names a running one; give an https:// TARGET_URL instead\n" "$where"
  elif [[ "${to_value[BACKEND]:-netns}" == compose ]]; then
    printf "%s: TARGET_TLS: BACKEND=compose has no HTTPS yet; use BACKEND=netns\n" "$where"
  elif [[ " ${to_value[PROXY]:-none} " == *" nginx "* ]]; then
    printf "%s: TARGET_TLS: nginx in front (PROXY=nginx, %s) forwards plain HTTP to the target; for HTTPS at nginx set PROXY_TLS=1 instead of TARGET_TLS\n" \
      "$where" "${to_origin[PROXY]:-defaults}"
  fi
}

# tls_dir KEY: the directory of the run's key and certificate of type KEY.
tls_dir() {
  printf '%s/tls/%s\n' "$LT_RUN_DIR" "$1"
}

# tls_make DIR KEY ADDRESS: a new KEY (ec or rsa) and its self-signed
# certificate for ADDRESS (and 127.0.0.1) in DIR: keystore.p12 (PKCS12, its
# password in DIR/password), cert.pem. DIR and every file in it are mode
# 600/700; the password reaches keytool in its environment, never its
# command line; and key.pem, the private key alone for nginx (PROXY_TLS).
# Fails, with keytool's message on stderr, when keytool cannot.
tls_make() {
  local dir="$1" key="$2" address="$3" password
  local -a key_args
  read -r -a key_args <<<"${TLS_KEYTOOL_ARGS[$key]}"
  (
    umask 077
    mkdir -p "$dir"
    password="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
    printf '%s\n' "$password" >"$dir/password"
    rm -f "$dir/keystore.p12" "$dir/cert.pem"
    LT_TLS_PASSWORD="$password" keytool -genkeypair -alias "$TLS_ALIAS" "${key_args[@]}" \
      -dname "CN=ltsuite-target" -ext "SAN=ip:$address,ip:127.0.0.1" -validity 7 \
      -storetype PKCS12 -keystore "$dir/keystore.p12" -storepass:env LT_TLS_PASSWORD >"$dir/keytool.log" 2>&1 \
      && LT_TLS_PASSWORD="$password" keytool -exportcert -rfc -alias "$TLS_ALIAS" \
        -keystore "$dir/keystore.p12" -storepass:env LT_TLS_PASSWORD -file "$dir/cert.pem" >>"$dir/keytool.log" 2>&1 \
      && LT_TLS_PASSWORD="$password" openssl pkcs12 -in "$dir/keystore.p12" -passin env:LT_TLS_PASSWORD \
        -nocerts -nodes -out "$dir/key.pem" >>"$dir/keytool.log" 2>&1
  ) || {
    cell_error "keytool could not make a $key key in $dir: $(tail -n 1 "$dir/keytool.log" 2>/dev/null)"
    return 1
  }
}

# tls_calibration: the calibration a cell's row predicts its handshakes from
# (ltsuite.tlsburst): LT_TLS_CALIBRATION when set, else the newest
# RESULTS/tls-calibration-*/calibration.tsv (make tls-calibrate); nothing
# when there is none.
tls_calibration() {
  if [[ -n "${LT_TLS_CALIBRATION:-}" ]]; then
    printf '%s\n' "$LT_TLS_CALIBRATION"
    return 0
  fi
  local newest="" file
  for file in "${LT_RESULTS_DIR:-$LT_ROOT/results}"/tls-calibration-*/calibration.tsv; do
    [[ -s "$file" ]] && newest="$file"
  done
  [[ -z "$newest" ]] || printf '%s\n' "$newest"
}

# tls_copy_calibration CELL_DIR: the calibration (tls_calibration) into the
# cell as tls-calibration.tsv, under a "# from PATH" line naming it, so the
# row is rebuilt from the same figures later; nothing without one.
tls_copy_calibration() {
  local source
  source="$(tls_calibration)"
  [[ -n "$source" && -s "$source" ]] || return 0
  { printf '# from %s\n' "${source#"$LT_ROOT"/}"; cat "$source"; } >"$1/tls-calibration.tsv"
}

# tls_cell_prepare CELL_ASSOC [CELL_DIR]: for a cell whose users meet TLS
# (tls_users_wanted), the run's key of its
# TLS_KEY (made by the first cell that needs it, for SERVER_ADDR), its
# certificate as TLS_CERT_FILE, and exported as CURL_CA_BUNDLE so the
# runner's curl (health checks, the server's stats) verifies the target
# with it; with CELL_DIR, the calibration copied there (tls_copy_calibration:
# the target's, k6's and nginx's costs); for a plain cell both emptied.
tls_cell_prepare() {
  local -n tp_values="$1"
  TLS_CERT_FILE=""
  unset CURL_CA_BUNDLE
  tls_users_wanted "$1" || return 0
  if [[ -n "${2:-}" ]]; then
    tls_copy_calibration "$2"
  fi
  local key="${tp_values[TLS_KEY]:-ec}" dir
  dir="$(tls_dir "$key")"
  [[ -s "$dir/cert.pem" ]] || tls_make "$dir" "$key" "${tp_values[SERVER_ADDR]}" || return 1
  TLS_CERT_FILE="$dir/cert.pem"
  export CURL_CA_BUNDLE="$TLS_CERT_FILE"
}

# tls_spring_env CELL_ASSOC: "NAME=value" lines that turn on HTTPS on the
# port under test in any Spring Boot application, without code: Spring
# Boot's server.ssl.* properties (in their environment form, as the other
# connector settings: target_spring_env) with the run's keystore. The
# actuator's own connector stays plain HTTP on 127.0.0.1: Spring Boot gives
# it the server's server.ssl.* unless management.server.ssl.enabled says
# false (measured: "Tomcat started on port 8081 (https)" without it, and the
# sampler's thread meters empty, run 20261129-003402-tls). Nothing for a
# plain cell.
tls_spring_env() {
  local -n ts_values="$1"
  tls_wanted ts_values || return 0
  local dir
  dir="$(tls_dir "${ts_values[TLS_KEY]:-ec}")"
  printf 'SERVER_SSL_ENABLED=true\nSERVER_SSL_KEYSTORETYPE=PKCS12\n'
  printf 'SERVER_SSL_KEYSTORE=file:%s\n' "$dir/keystore.p12"
  printf 'SERVER_SSL_KEYSTOREPASSWORD=%s\n' "$(<"$dir/password")"
  printf 'SERVER_SSL_KEYALIAS=%s\n' "$TLS_ALIAS"
  printf 'MANAGEMENT_SERVER_SSL_ENABLED=false\n'
}

# tls_scheme CELL_ASSOC: https for a TARGET_TLS=1 cell, else http.
tls_scheme() {
  if tls_wanted "$1"; then printf 'https\n'; else printf 'http\n'; fi
}
