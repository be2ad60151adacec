# shellcheck shell=bash
# Two machines on one store at once (sourced after lib.sh; test_two_writers.sh for file://
# and s3://, test_azure_two_writers.sh for az://): the old machine (A) is stopped in the
# middle of persisting step-4 while the new one (B) restores step-3, commits its own
# (different) step-4, step-5 and step-6, and retires old checkpoints; then A resumes and
# finishes. Nothing may move LATEST backwards, no chunk a manifest names may be deleted
# (every checkpoint verifies), a chunk first stored long ago that B deduplicates against is
# written again (its age renewed for gc's grace), and A must not report its step-4 as
# stored when the store holds B's.
#
# The caller defines, for its store:
#   tw_latest        prints LATEST's JSON (nothing when there is none yet)
#   tw_mark_old      called once A persisted step-3: what the store holds now is "old"
#   tw_age_old       called while A is stopped: makes what tw_mark_old marked two hours old
#                    (past gc's one-hour grace)

GATED="$RR_SRC/tests/integration/trainers/gated.py"
BIG_MIB=64

# On a failure, agents still running are let go: their trainers stop at the stop gate.
AGENTS=""
release_agents() {
	local p
	for g in "$W"/*/gate-*; do [ -d "$g" ] && touch "$g/stop"; done
	for p in $AGENTS; do kill -CONT "$p" 2>/dev/null || true; done
	for p in $AGENTS; do wait "$p" 2>/dev/null || true; done
}

# latest_is N: LATEST names step-N.
latest_is() { [ "$(latest_step)" = "$1" ]; }

# latest_step: the step number LATEST names, empty if there is none or it is unreadable.
latest_step() { tw_latest 2>/dev/null | sed -nE 's/.*"checkpoint":"step-([0-9]+)".*/\1/p' || true; }

# poll_latest OUT STOPFILE: appends every new LATEST step seen to OUT until STOPFILE.
poll_latest() {
	local out=$1 stop=$2 last="" v
	: > "$out"
	while [ ! -e "$stop" ]; do
		v=$(latest_step)
		if [ -n "$v" ] && [ "$v" != "$last" ]; then
			echo "$v" >> "$out"
			last=$v
		fi
		sleep 0.01
	done
}

# scenario KIND STORE: the two machines on STORE (tw_* above say how to watch and age it).
scenario() {
	local kind=$1 store=$2
	local d="$W/$kind" a_pid b_pid poll_pid a_rc b_rc
	mkdir -p "$d/gate-a" "$d/gate-b"
	export RESUME_RUN_STORE=$store

	# Machine A commits step-1..3 and persists them.
	"$RR_BIN" --keep 2 --checkpoint-dir "$d/ckpt-a" -- "$PY" "$GATED" --gate "$d/gate-a" \
		--tag a --big $BIG_MIB --big-names step-4 step-1 step-2 step-3 step-4 \
		> "$d/a.log" 2>&1 &
	a_pid=$!
	AGENTS="$AGENTS $a_pid"
	touch "$d/gate-a/commit-step-1" "$d/gate-a/commit-step-2" "$d/gate-a/commit-step-3"
	wait_for 60 grep -q "persisted step-3" "$d/a.log" || fail "$kind: A did not persist step-3"
	wait_for 20 latest_is 3 || fail "$kind: LATEST is not step-3"
	sleep 1 # A's retention after step-3
	tw_mark_old "$d"

	poll_latest "$d/latest-history" "$d/stop-poll" &
	poll_pid=$!
	# A commits a big step-4 and is stopped in the middle of persisting it.
	touch "$d/gate-a/commit-step-4"
	until grep -q "persisting step-4" "$d/a.log"; do sleep 0.005; done
	kill -STOP $a_pid
	# What step-1..3 stored was uploaded two hours ago (past the 1 h grace); A's in-flight
	# step-4 chunks are new.
	tw_age_old "$d"
	# (not grep -q: under pipefail, ls killed by SIGPIPE would fail the pipeline)
	# shellcheck disable=SC2143
	if [ -n "$("$RR_BIN" ls 2>/dev/null | grep -E '^. step-4 ')" ]; then
		kill -CONT $a_pid
		fail "$kind: A finished step-4 before it could be stopped (make BIG_MIB larger)"
	fi

	# Machine B restores step-3, then commits its own step-4..6 (keep 3: it retires
	# step-1..3 while A's step-4 chunks are still unnamed, and keeps its step-4).
	"$RR_BIN" --keep 3 --checkpoint-dir "$d/ckpt-b" -- "$PY" "$GATED" --gate "$d/gate-b" \
		--tag b step-4 step-5 step-6 > "$d/b.log" 2>&1 &
	b_pid=$!
	AGENTS="$AGENTS $b_pid"
	wait_for 60 grep -q "restored step-3" "$d/b.log" || fail "$kind: B did not restore step-3"
	for s in 4 5 6; do
		touch "$d/gate-b/commit-step-$s"
		wait_for 60 grep -qE "persisted step-$s|already in the store" "$d/b.log" ||
			fail "$kind: B did not persist step-$s"
	done
	touch "$d/gate-b/stop"
	set +e; wait $b_pid; b_rc=$?; set -e
	expect_eq "$b_rc" 0 "$kind: B's exit status"
	ok "$kind: B restored step-3 and persisted its step-4..6 while A was stopped mid-persist"

	# A resumes: its step-4 lands on B's.
	kill -CONT $a_pid
	wait_for 60 grep -qE "step-4 is already in the store|persisted step-4|persist of step-4" \
		"$d/a.log" || fail "$kind: A did not finish step-4"
	touch "$d/gate-a/stop"
	set +e; wait $a_pid; a_rc=$?; set -e
	touch "$d/stop-poll"
	wait $poll_pid
	expect_eq "$a_rc" 0 "$kind: A's exit status"
	expect_grep "step-4 is already in the store with other content" "$d/a.log" \
		"$kind: A says its step-4 is not stored"
	expect_no_grep "persisted step-4|step-4 is already in the store; not written again" \
		"$d/a.log" "$kind: A reports no success for a step-4 it did not write"
	ok "$kind: A does not report B's step-4 as its own"

	# B deduplicated frozen.bin against a two-hour-old chunk: written again.
	expect_grep "chunks already stored were written again" "$d/b.log" \
		"$kind: B renewed the old chunk it relied on"
	# LATEST only ever moved forward, and ends at the newest.
	sort -n -c "$d/latest-history" 2>/dev/null ||
		fail "$kind: LATEST went backwards: $(tr '\n' ' ' < "$d/latest-history")"
	expect_eq "$(latest_step)" 6 "$kind: LATEST at the end"
	ok "$kind: LATEST moved only forward ($(tr '\n' ' ' < "$d/latest-history"| sed 's/ $//'))"

	# Every checkpoint left has every chunk it names, and step-4 is B's.
	run_rr "$d/verify.log" verify
	expect_eq "$RC" 0 "$kind: verify ($(cat "$d/verify.log"))"
	expect_no_grep "INCOMPLETE|DAMAGED" "$d/verify.log" "$kind: verify"
	expect_grep "^step-6: ok" "$d/verify.log" "$kind: step-6 verifies"
	expect_grep "^step-5: ok" "$d/verify.log" "$kind: step-5 verifies"
	expect_grep "^step-4: ok" "$d/verify.log" "$kind: step-4 verifies"
	run_rr "$d/r4.log" restore --checkpoint step-4 --to "$d/r4"
	expect_eq "$RC" 0 "$kind: restore of step-4"
	cmp -s "$d/r4/step-4/weights.bin" "$d/ckpt-b/step-4/weights.bin" ||
		fail "$kind: the store's step-4 is not B's"
	run_rr "$d/r.log" restore --to "$d/r"
	expect_eq "$RC" 0 "$kind: restore of the newest"
	diff -r "$d/r/step-6" "$d/ckpt-b/step-6" > /dev/null || fail "$kind: step-6 restores different"
	ok "$kind: every checkpoint left verifies; the newest restores to B's bytes"
	unset RESUME_RUN_STORE
}
