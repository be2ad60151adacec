# Shared helpers for the integration tests. Each test sources this, gets a fresh work
# directory in $W, and uses the real binary ($RR_BIN) with real trainer processes.
set -euo pipefail

: "${RR_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${RR_BIN:=$RR_SRC/build/resume-run}"
PY=/usr/bin/python3
TRAINER="$RR_SRC/scripts/example_trainer.py"
# The resume_run package (python/), then the example trainers (scripts/).
export PYTHONPATH="$RR_SRC/python:$RR_SRC/scripts${PYTHONPATH:+:$PYTHONPATH}"
# The agent's own variables must come from each test, not from whoever runs it.
unset RESUME_RUN_STORE RESUME_RUN_ID RESUME_RUN_CHECKPOINT_DIR RESUME_RUN_RESTORE_DIR \
      RESUME_RUN_NOTICE_FILE RESUME_RUN_SIGNAL RESUME_RUN_ATTEMPT RESUME_RUN_METADATA_ENDPOINT
# Where tests/thirdparty/install.sh keeps the servers and SDKs it builds, fixed before a
# test points HOME elsewhere.
export RR_TOOLS_CACHE=${RR_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/resume-run/thirdparty}
# sdk_python: the Python of the clouds' SDKs (boto3, google-cloud-storage), installed once.
sdk_python() {
	"$RR_SRC/tests/thirdparty/install.sh" sdk >&2
	RR_TOOLS_PRINT=1 "$RR_SRC/tests/thirdparty/install.sh" sdk
}
# No cloud metadata probes unless a test asks for them (the cloud tests do).
export RESUME_RUN_CLOUD=none

W=$(mktemp -d /tmp/rr-it.XXXXXX)
# cleanup [STATUS]: the EXIT trap's last word (a lib's own trap passes the status it saw:
# an "(exit $rc)" there would end the trap under set -e before cleanup ran).
cleanup() {
	local rc=${1:-$?}
	if [ "$rc" -ne 0 ]; then
		echo "--- FAILED ($rc); work directory kept: $W" >&2
		for f in "$W"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 40 "$f" >&2; }; done
	else
		rm -rf "$W"
	fi
}
trap cleanup EXIT
cd "$W"

# The agent's status when a preemption/termination notice stopped the trainer (its default
# --preempted-exit-code, EX_TEMPFAIL): tests of notice-driven stops expect this.
# shellcheck disable=SC2034 # used by the tests that source this file
RR_PREEMPTED=75

PASSED=0
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { PASSED=$((PASSED + 1)); echo "ok - $*"; }
finish() { echo "$PASSED passed, 0 failed"; }

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() { [ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"; }
# expect_grep PATTERN FILE WHAT
expect_grep() { grep -qE -- "$1" "$2" || fail "$3: no line matching '$1' in $2"; }
expect_no_grep() { ! grep -qE -- "$1" "$2" || fail "$3: unexpected line matching '$1' in $2"; }

# persisted_since N LOG: LOG says a checkpoint step-M with M >= N was persisted. Not step-N
# itself: a trainer committing faster than persists take has step-N replaced in the persist
# queue by a newer commit (the newest wins), and step-N is never persisted.
persisted_since() {
	sed -nE 's/.*: persisted step-([0-9]+):.*/\1/p' "$2" 2>/dev/null |
		awk -v n="$1" '$1 >= n { found = 1 } END { exit !found }'
}

# wait_for SECONDS COMMAND...: polls until COMMAND succeeds (bounded).
wait_for() {
	local limit=$1; shift
	local end=$((SECONDS + limit))
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.05
	done
}

# run_rr LOG ARGS...: runs the agent, stderr+stdout to LOG; sets RC.
run_rr() {
	local log=$1; shift
	set +e
	"$RR_BIN" "$@" >"$log" 2>&1
	# shellcheck disable=SC2034 # the result, for the test that sourced this file
	RC=$?
	set -e
}

# hold_store_locks STORE_DIR SECONDS: a process holds every lock of the file store at
# STORE_DIR for SECONDS, so that its puts wait (a persist in flight, a restore's lease);
# returns once they are held, the process's pid in LOCKER.
hold_store_locks() {
	local out
	out=$(mktemp "$W/locks.XXXXXX")
	"$PY" - "$1/.locks" "$2" >"$out" 2>&1 <<'PY' &
import fcntl, os, sys, time
os.makedirs(sys.argv[1], exist_ok=True)
fds = []
for i in range(256):
    fd = os.open(os.path.join(sys.argv[1], "%02x" % i), os.O_RDONLY | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    fds.append(fd)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
PY
	# shellcheck disable=SC2034 # the pid, for the test that sourced this file
	LOCKER=$!
	wait_for 30 grep -q held "$out" || fail "the store's locks were not taken"
}

# Final state of an uninterrupted example training run (same seed and steps).
reference_run() {
	local steps=$1 out=$2
	env -u RESUME_RUN_RESTORE_DIR RESUME_RUN_CHECKPOINT_DIR="$W/ref-ckpt" \
		"$PY" "$TRAINER" --steps "$steps" --step-time 0 --checkpoint-every 0 --out "$out" >/dev/null
}

# free_port: a TCP port nothing listens on now (tests run in parallel: never a fixed one).
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

json_field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
