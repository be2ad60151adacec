# AWS's own EC2 metadata mock (amazon-ec2-metadata-mock, AEMM), sourced after lib.sh. It is
# built once from the Go module proxy into a cache outside the checkout
# (tests/thirdparty/install.sh). IMDSv2 is enforced (-I): a GET without a session token
# gets 401, and AEMM logs "Token required; No token provided." for it.
AEMM_PID=
AEMM_BIN=$(RR_TOOLS_PRINT=1 "$RR_SRC/tests/thirdparty/install.sh" aemm)

# start_aemm NAME [AEMM ARGUMENTS...]: starts AEMM on a free port with the arguments (e.g.
# `spot -a stop -t TIME --mock-trigger-time TIME`), its log in $W/aemm-NAME.log; waits until
# it hands out tokens. Sets AEMM_URL and AEMM_LOG.
start_aemm() {
	local name=$1 port; shift
	"$RR_SRC/tests/thirdparty/install.sh" aemm
	port=$(free_port)
	AEMM_LOG="$W/aemm-$name.log"
	"$AEMM_BIN" -n 127.0.0.1 -p "$port" -I "$@" > "$AEMM_LOG" 2>&1 &
	AEMM_PID=$!
	AEMM_URL="http://127.0.0.1:$port"
	wait_for 20 curl -fsS -o /dev/null -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' \
		"$AEMM_URL/latest/api/token" || fail "AEMM did not start: $(tail -n 5 "$AEMM_LOG")"
}

stop_aemm() {
	[ -n "$AEMM_PID" ] || return 0
	kill "$AEMM_PID" 2>/dev/null || true
	wait "$AEMM_PID" 2>/dev/null || true
	AEMM_PID=
}

# rfc3339 SECONDS_FROM_NOW: a UTC time in the form AEMM's flags take.
rfc3339() { date -u -d "@$(( $(date +%s) + $1 ))" +%Y-%m-%dT%H:%M:%SZ; }
unix_of() { date -u -d "$1" +%s; }

# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'aemm_rc=$?; stop_aemm; cleanup $aemm_rc' EXIT
