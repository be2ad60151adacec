# The project's cloud metadata test server (tests/metadata/server.py), sourced after lib.sh.
META_PID=

# start_meta CLOUD: starts the server for aws|gcp|azure; sets META_URL and META_CTL (its
# control API, which keeps answering while the service itself is made to fail).
start_meta() {
	"$PY" "$RR_SRC/tests/metadata/server.py" --cloud "$1" --port 0 --control-port 0 \
		> "$W/meta-$1.out" 2> "$W/meta-$1.log" &
	META_PID=$!
	wait_for 60 grep -q '^control' "$W/meta-$1.out" || fail "the $1 metadata test server did not start"
	# shellcheck disable=SC2034 # for the test that sourced this file
	META_URL="http://127.0.0.1:$(sed -nE 's/^ready ([0-9]+)/\1/p' "$W/meta-$1.out")"
	META_CTL="http://127.0.0.1:$(sed -nE 's/^control ([0-9]+)/\1/p' "$W/meta-$1.out")"
}

stop_meta() {
	[ -n "$META_PID" ] || return 0
	kill "$META_PID" 2>/dev/null || true
	wait "$META_PID" 2>/dev/null || true
	META_PID=
}

# ctl PATH: POSTs to the control API (announce?in=0, rebalance, fail?mode=down&for=4, ...).
ctl() { curl -fsS -X POST "$META_CTL/_test/$1" > /dev/null || fail "control call $1 failed"; }
# state FIELD: a field of the server's /_test/state JSON.
state() { curl -fsS "$META_CTL/_test/state" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'meta_rc=$?; stop_meta; cleanup $meta_rc' EXIT
