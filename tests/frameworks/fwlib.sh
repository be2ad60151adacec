# Shared by the real-framework tests (tests/frameworks/test_*.sh): the built wheel installed
# into a fresh venv that also sees the pinned frameworks (tests/frameworks/wheel_venv.sh
# makes it, as the CTest fixture frameworks_wheel), and the drill every framework goes
# through.
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
BUILD=$(dirname "$RR_BIN")
VENV="$BUILD/wheel-venv"
[ -x "$VENV/bin/resume-run" ] || fail "no $VENV/bin/resume-run: the fixture frameworks_wheel (tests/frameworks/wheel_venv.sh) makes it"
# The agent is the wheel's console command; the trainers import resume_run from the wheel.
RR_BIN="$VENV/bin/resume-run"
FPY="$VENV/bin/python"
T="$RR_SRC/tests/frameworks/trainers"
export PYTHONPATH="$T" # the trainers' common.py; resume_run comes from the venv
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export OMP_NUM_THREADS=1 PYTHONWARNINGS=ignore
# DeepSpeed's op, compiled once by scripts/install-frameworks.sh into the frameworks venv.
TORCH_EXTENSIONS_DIR="$("$RR_SRC/scripts/install-frameworks.sh" --path)/torch_extensions"
export TORCH_EXTENSIONS_DIR
"$FPY" -c 'import resume_run, sys; sys.exit(0 if resume_run.__file__.startswith(sys.argv[1]) else 1)' "$VENV/" ||
	fail "resume_run does not come from the wheel installed in $VENV"

# reference NAME STEPS CMD...: an uninterrupted run without the agent; weights in NAME.ref.
# They follow from the frameworks (the cached venv), the trainers, the module resume_run,
# the command line and the CPU alone (seeded, one thread, no agent), so they are kept
# outside the checkout under the SHA-256 of all of these, and a later run of the same code
# on the same machine takes them from there instead of training again (the log says which).
# Should anything outside the key change the weights, the drill's comparison fails: a stale
# reference cannot make it pass. RR_FW_REF_CACHE=0 always trains.
FW_REFS=${XDG_CACHE_HOME:-$HOME/.cache}/resume-run/framework-refs
reference() {
	local name=$1 steps=$2 key
	shift 2
	key=$({
		"$RR_SRC/scripts/install-frameworks.sh" --path
		grep -m1 '^model name' /proc/cpuinfo
		grep -m1 '^flags' /proc/cpuinfo
		printf '%s\n' "$steps" "$@" | sed "s#$RR_SRC#SRC#g; s#$BUILD#BUILD#g"
		cat "$T"/*.py "$RR_SRC"/python/resume_run/*.py "$RR_SRC/tests/frameworks/fwlib.sh"
	} | sha256sum | cut -c1-32)
	if [ "${RR_FW_REF_CACHE:-1}" != 0 ] && [ -s "$FW_REFS/$key" ]; then
		cp "$FW_REFS/$key" "$W/$name.ref"
		echo "$name: the uninterrupted run's weights from $FW_REFS/$key (same frameworks, trainers, resume_run, command, CPU)"
		return 0
	fi
	env RESUME_RUN_CHECKPOINT_DIR="$W/$name-ref-ckpt" "$@" --steps "$steps" --out "$W/$name.ref" \
		> "$name-ref.log" 2>&1 || fail "$name: the uninterrupted run failed: $(tail -n 20 "$name-ref.log")"
	[ -s "$W/$name.ref" ] || fail "$name: the uninterrupted run wrote no weights"
	mkdir -p "$FW_REFS" && cp "$W/$name.ref" "$FW_REFS/$key.tmp.$$" && mv "$FW_REFS/$key.tmp.$$" "$FW_REFS/$key"
}

# drill NAME STEPS CMD...: machine A trains under the agent (--precision exact); after step 3
# a drill notice comes; the framework saves its own way, the agent makes it durable and
# exits 75. Machine A is lost (its checkpoint dir deleted, a copy kept in NAME-a-copy for
# drill_auto and the checks); machine B, a fresh directory with the same store, restores it
# and the framework resumes to STEPS. Sets SAVED (the step saved on the notice) and CKPT
# (its name).
drill() {
	local name=$1 steps=$2
	shift 2
	local store="file://$W/$name-store"
	(wait_for 240 grep -qs ': step 3$\|^step 3$' "$W/$name-a.log" && touch "$W/$name-NOTICE") &
	local toucher=$!
	run_rr "$name-a.log" --precision exact --drill-file "$W/$name-NOTICE" \
		--store "$store" --checkpoint-dir "$W/$name-a" -- "$@" --steps "$steps" --step-time 0.2
	wait "$toucher" || fail "$name: training never reached step 3"
	expect_eq "$RC" "$RR_PREEMPTED" "$name: machine A's exit status"
	expect_grep 'notice: preempt from file' "$name-a.log" "$name: the drill notice"
	SAVED=$(sed -nE 's/^(rank 0: )?saved at step ([0-9]+)$/\2/p' "$name-a.log" | tail -n 1)
	[ -n "$SAVED" ] || fail "$name: the framework did not save on the signal"
	expect_grep "^(rank 0: )?left at step $SAVED for the notice" "$name-a.log" "$name: left after the save"
	[ "$SAVED" -lt "$steps" ] || fail "$name: saved at step $SAVED, the end: the drill came too late"
	CKPT=$(sed -nE 's/.*checkpoint (.*) is durable in the store.*/\1/p' "$name-a.log" | tail -n 1)
	[ -n "$CKPT" ] || fail "$name: no checkpoint durable before the exit"
	"$RR_BIN" ls --store "$store" > "$name-ls.txt" 2>&1
	expect_grep "^\* $CKPT +committed" "$name-ls.txt" "$name: $CKPT committed and LATEST in the store"
	cp -a "$W/$name-a" "$W/$name-a-copy"
	rm -rf "$W/$name-a" "$W/$name-NOTICE" # the machine is lost
	resume "$name" exact "$steps" "$@"
}

# resume NAME PRECISION STEPS CMD...: machine B, a fresh directory with NAME's store,
# restores CKPT, and the framework resumes at SAVED and trains to STEPS; its final weights
# in NAME.PRECISION.
resume() {
	local name=$1 precision=$2 steps=$3
	shift 3
	run_rr "$name-b.log" --precision "$precision" --store "file://$W/$name-store" \
		--checkpoint-dir "$W/$name-b" -- "$@" --steps "$steps" --out "$W/$name.$precision"
	expect_eq "$RC" 0 "$name: machine B's exit status"
	expect_grep "restored $CKPT" "$name-b.log" "$name: machine B restored $CKPT"
	expect_grep "^(rank 0: )?resumed at step $SAVED$" "$name-b.log" "$name: the framework resumed at step $SAVED"
	expect_grep "^(rank 0: )?done at step $steps$" "$name-b.log" "$name: trained to the end"
}

# drill_exact NAME STEPS CMD...: the drill under --precision exact; the final weights are
# byte-identical to the uninterrupted run's (NAME.ref).
drill_exact() {
	local name=$1 steps=$2
	shift 2
	drill "$name" "$steps" "$@"
	cmp -s "$W/$name.exact" "$W/$name.ref" || fail "$name: final weights differ from the uninterrupted run's: $("$FPY" "$RR_SRC/tests/frameworks/compare.py" weights "$W/$name.ref" "$W/$name.exact")"
	ok "$name: drill at step $SAVED -> its own save ($CKPT) -> durable -> exit 75 -> machine lost -> restored on a fresh directory -> resumed -> final weights identical to an uninterrupted run (--precision exact)"
}

# drill_auto NAME STEPS CMD...: after drill_exact NAME: the checkpoint directory machine A
# left (NAME-a-copy: the framework's own save on the notice) is made durable again under
# --precision auto by an agent whose trainer only exits (the agent persists a checkpoint it
# finds in the checkpoint directory at start, and flushes its uploads when the trainer
# exits 0), in a store of its own;
# machine B restores it and the framework trains on to the end from it. What was restored is
# within the documented bound of what was saved (F32 values: relative error at most 2^-8,
# signs, zeros, non-F32 tensors and other bytes exact). The notice, the framework's save on
# it and the exit 75 are drill_exact's, and the same whatever the precision: a second
# trainer on machine A would import the framework again to repeat them.
drill_auto() {
	local name=$1 steps=$2 auto="$1-auto"
	shift 2
	cp -a "$W/$name-a-copy" "$W/$auto-a"
	run_rr "$auto-a.log" --precision auto --store "file://$W/$auto-store" --checkpoint-dir "$W/$auto-a" -- true
	expect_eq "$RC" 0 "$name: the agent persisting $CKPT under --precision auto"
	expect_grep "persisted $CKPT:" "$auto-a.log" "$name: $CKPT persisted under --precision auto"
	resume "$auto" auto "$steps" "$@"
	# One compare.py for both checks: the bound's line, then the weights' difference.
	"$FPY" "$RR_SRC/tests/frameworks/compare.py" bound "$W/$name-a-copy/$CKPT" "$W/$auto-b/$CKPT" \
		weights "$W/$name.ref" "$W/$auto.auto" > "$auto-bound.log" 2>&1 ||
		fail "$name: restored checkpoint out of bound (or the final weights unreadable): $(tail -n 5 "$auto-bound.log")"
	ok "$name: $CKPT persisted under --precision auto, restored within the bound ($(tail -n 2 "$auto-bound.log" | head -n 1)); resumed to the end ($(tail -n 1 "$auto-bound.log") from the uninterrupted run)"
}

# crash NAME EVERY CMD...: saves every EVERY steps; the framework's second save crashes in its
# middle. The first is persisted; nothing of the second is, and no temporary name either.
crash() {
	local name=$1 every=$2
	shift 2
	local store="file://$W/$name-crash-store"
	run_rr "$name-crash.log" --max-restarts 0 --precision exact --store "$store" \
		--checkpoint-dir "$W/$name-crash" -- "$@" --steps 1000 --save-every "$every" --crash-at-save 2
	[ "$RC" -ne 0 ] && [ "$RC" -ne "$RR_PREEMPTED" ] || fail "$name: the crashing trainer's status: $RC"
	expect_grep 'crash in the middle of the save' "$name-crash.log" "$name: crashed in the save"
	"$RR_BIN" ls --store "$store" > "$name-crash-ls.txt" 2>&1
	awk 'NR > 1 { print ($1 == "*") ? $2 : $1 }' "$name-crash-ls.txt" > "$name-crash-names.txt"
	expect_eq "$(wc -l < "$name-crash-names.txt")" 1 "$name: checkpoints in the store after the crash"
	local first second
	first=$(cat "$name-crash-names.txt")
	second=$((2 * every))
	[ "$("$FPY" -c 'import resume_run, sys; print(resume_run.step_of(sys.argv[1]))' "$first")" = "$every" ] ||
		fail "$name: the stored checkpoint is $first, not the save at step $every"
	expect_no_grep "[^0-9]$second([^0-9]|$)|tmp" "$name-crash-names.txt" "$name: the half-written save stored"
	expect_no_grep "checkpoint [^ ]*[^0-9]$second([^0-9][^ ]*)? (committed|is durable)" "$name-crash.log" \
		"$name: the half-written save seen as committed"
	ok "$name: a crash in the middle of the framework's save at step $second is never persisted ($first is)"
}
