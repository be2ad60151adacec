# The fault-injection proxy (tests/faults/proxy.py) between the agent and a store's test
# server, sourced after lib.sh and s3lib.sh (and after start_s3 and s3_env), or after
# azurelib.sh for Azurite (test_azure_faults.sh: FAULT_STORE_ROOT=az://CONTAINER, its own
# trap).
FAULT_PID=

# start_proxy PORT [ARGS...]: starts the proxy in front of 127.0.0.1:PORT with more proxy
# options; sets FAULT_CTL (its control API) and FAULT_URL (where clients go instead).
start_proxy() {
	local port=$1
	shift
	# Emptied here, not by the redirection in the child: a proxy started again must not be
	# found "ready" by the previous one's ports.
	: > "$W/faults.out"
	"$PY" "$RR_SRC/tests/faults/proxy.py" --upstream "127.0.0.1:$port" "$@" \
		> "$W/faults.out" 2> "$W/faults.log" &
	FAULT_PID=$!
	wait_for 60 grep -q '^ready' "$W/faults.out" || fail "the fault proxy did not start"
	FAULT_CTL="http://127.0.0.1:$(sed -nE 's/^control ([0-9]+)/\1/p' "$W/faults.out")"
	FAULT_URL="http://127.0.0.1:$(sed -nE 's/^ready ([0-9]+)/\1/p' "$W/faults.out")"
}

# start_faults: the proxy in front of $S3_PORT (after s3_env), AWS_ENDPOINT_URL pointed at
# it (s3cli keeps talking to the server directly through S3_DIRECT). FAULT_ARGS: more of the
# proxy's options, split into words (--max-skew 900).
start_faults() {
	# s3rver ignores If-None-Match / If-Match: the proxy enforces them as S3 does.
	# shellcheck disable=SC2086
	start_proxy "$S3_PORT" \
		--s3-preconditions "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY:$AWS_REGION" \
		${FAULT_ARGS:-}
	S3_DIRECT="http://127.0.0.1:$S3_PORT"
	AWS_ENDPOINT_URL=$FAULT_URL
	export AWS_ENDPOINT_URL
}

stop_faults() {
	[ -n "$FAULT_PID" ] || return 0
	kill "$FAULT_PID" 2>/dev/null || true
	wait "$FAULT_PID" 2>/dev/null || true
	FAULT_PID=
}

# fault JSON: adds a rule (see tests/faults/proxy.py); no_faults: removes them all.
fault() { curl -fsS -X POST --data-binary "$1" "$FAULT_CTL/rules" > /dev/null || fail "fault rule $1 refused"; }
no_faults() { curl -fsS -X DELETE "$FAULT_CTL/rules" > /dev/null; }
# fired: how many times the rules fired in all.
fired() { curl -fsS "$FAULT_CTL/rules" | "$PY" -c 'import json,sys; print(sum(r["fired"] for r in json.load(sys.stdin)))'; }
# s3d ARGS...: the AWS CLI at the server itself, past the proxy.
s3d() { /usr/bin/aws --endpoint-url "$S3_DIRECT" "$@"; }

# Agents a test runs in the background, stopped if the test ends early (by their ids: the
# agent forwards the SIGTERM to its trainer).
BG_PIDS=
stop_bg() {
	local p
	for p in $BG_PIDS; do kill -TERM "$p" 2>/dev/null || true; done
	for p in $BG_PIDS; do wait_for 10 sh -c "! kill -0 $p 2>/dev/null" || kill -KILL "$p" 2>/dev/null || true; done
	BG_PIDS=
}

# set +e: a failing stop_* under set -e would end the trap before cleanup reports.
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'f_rc=$?; set +e; stop_bg; stop_faults; stop_s3; cleanup $f_rc' EXIT

. "$RR_SRC/tests/integration/faultlib_commit.sh"

# trainer_script FILE DIR STEPS [BIG]: a trainer that commits step-1..STEPS into DIR, one
# every 0.7 s, then lingers 1 s so the agent persists the last one while it runs.
trainer_script() {
	cat > "$1" <<SH
#!/usr/bin/env bash
. "$RR_SRC/tests/integration/faultlib_commit.sh"
for n in \$(seq $3); do commit_step "$2" \$n ${4:-}; sleep 0.7; done
sleep 1
SH
	chmod +x "$1"
}

# persist NAME STEPS [BIG]: the agent (with $FAULT_AGENT_ARGS) and a trainer committing STEPS
# steps into ckpt-NAME, storing in $FAULT_STORE_ROOT/NAME (default s3://$S3_BUCKET/NAME)
# under whatever faults are set: it exits 0 with its last commit persisted.
persist() {
	trainer_script "train-$1.sh" "$W/ckpt-$1" "$2" "${3:-}"
	# shellcheck disable=SC2086 # FAULT_AGENT_ARGS is a list of options
	run_rr "$1.log" -v --threads 2 ${FAULT_AGENT_ARGS:-} --store "${FAULT_STORE_ROOT:-s3://$S3_BUCKET}/$1" \
		--checkpoint-dir "ckpt-$1" -- "./train-$1.sh"
	expect_eq "$RC" 0 "$1: agent status"
	expect_grep "persisted step-$2:" "$1.log" "$1: the last commit persisted"
}

# check_store NAME DIR: the fault-free reading of the store $FAULT_STORE_ROOT/NAME (default
# s3://ckpt/NAME): the newest step the trainer committed in DIR is LATEST, verify calls every
# checkpoint ok (none DAMAGED), and it restores onto an empty directory byte-identical to
# what the trainer wrote.
check_store() {
	local name=$1 dir=$2 newest store="${FAULT_STORE_ROOT:-s3://$S3_BUCKET}/$1"
	newest=$(ls "$dir" | grep -E '^step-[0-9]+$' | sort -t- -k2 -n | tail -n 1)
	[ -n "$newest" ] || fail "$name: the trainer committed nothing"
	"$RR_BIN" ls --store "$store" > "$name-ls.out" 2>&1 || fail "$name: ls: $(cat "$name-ls.out")"
	expect_grep "^\* $newest " "$name-ls.out" "$name: LATEST is the newest commit"
	run_rr "$name-verify.log" verify --store "$store"
	expect_eq "$RC" 0 "$name: verify status"
	expect_no_grep 'DAMAGED' "$name-verify.log" "$name: nothing reported damaged"
	expect_grep "^$newest: ok" "$name-verify.log" "$name: the newest verifies"
	rm -rf "$name-restored"
	run_rr "$name-restore.log" restore --store "$store" --to "$name-restored"
	expect_eq "$RC" 0 "$name: restore status"
	diff -r "$name-restored/$newest" "$dir/$newest" > /dev/null || fail "$name: the restored $newest differs from the trainer's"
}
