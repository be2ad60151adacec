#!/usr/bin/env bash
# A checkpoint the trainer cannot resume from is set aside, not restarted from until the agent
# gives up (docs/how-it-works.md, "Suspect and proven checkpoints"): after two failures from it
# with no newer commit it is marked suspect in the store; the agent restores the one before, the
# trainer commits the name again and that commit replaces the suspect one; a new machine passes
# a suspect checkpoint over; the checkpoint resumed from is proven, and retention keeps it; `ls`
# and `report` say so, `unmark` clears a mark; a command that cannot start (127) marks nothing;
# a local copy of a suspect checkpoint is set aside at the next start; a suspect checkpoint
# still uploading when a preemption comes in the restart backoff is not what the notice
# persists.
. "$(dirname "$0")/lib.sh"

POISON="$RR_SRC/tests/integration/trainers/poison.py"
S="file://$W/store"
mark() { echo "$W/store/default/checkpoints/$1/$2.json"; }

# Machine 1 writes step-1..6; step-6 is poisoned.
run_rr m1.log --store "$S" --checkpoint-dir "$W/c1" -- "$PY" "$POISON" --until 6 --poison-at 6
expect_eq "$RC" 0 "machine 1"

# Machine 2 restores step-6: the trainer crashes twice, the agent marks it suspect, restores
# step-5 in its place, and the trainer goes on, committing step-6 again.
run_rr m2.log --store "$S" --checkpoint-dir "$W/c2" -- "$PY" "$POISON" --until 7
expect_eq "$RC" 0 "machine 2 finished"
expect_eq "$(grep -c 'cannot resume from step-6: poisoned' m2.log)" 2 "two failed attempts from step-6"
expect_grep 'checkpoint step-6 marked suspect: the trainer failed 2 times after resuming from it' m2.log "marked"
expect_grep 'restarting the trainer from step-5, the checkpoint before suspect step-6' m2.log "restored the one before"
expect_grep 'training from step 5 \(attempt 2\)' m2.log "resumed from step-5"
expect_grep 'step-6 is in the store marked suspect .*: this commit replaces it' m2.log "re-commit replaces"
expect_grep 'checkpoint step-5 is proven' m2.log "step-5 proven"
[ -e "$(mark step-6 suspect)" ] && fail "the suspect mark of the replaced step-6 is still there"
[ -e "$(mark step-5 proven)" ] || fail "no proven mark for step-5"
ls -A "$W/c2" | grep -q '^\.step-6\.suspect-' || fail "the suspect step-6 was not moved aside"
"$RR_BIN" restore --store "$S" --checkpoint step-6 --to "$W/r6" 2>/dev/null
grep -q '"poisoned": false' "$W/r6/step-6/state.json" || fail "the stored step-6 is still the poisoned one"
"$RR_BIN" report --store "$S" > report2.txt
expect_grep 'step-6 after 2 failures \(last exit status 1\); restored instead: step-5' report2.txt "report"
ok "poisoned step-6: two failures, marked suspect, step-5 restored, step-6 committed again replaces it; step-5 proven"

# Machine 3 resumes from step-7 (proven once step-8 is durable) and trains to step-10: with
# --keep 3, retention keeps step-8..10 and the newest proven checkpoint, step-7.
run_rr m3.log --store "$S" --checkpoint-dir "$W/c3" -- "$PY" "$POISON" --until 10
expect_eq "$RC" 0 "machine 3 finished"
"$RR_BIN" ls --store "$S" > ls2.txt
for c in step-7 step-8 step-9 step-10; do grep -q " $c " ls2.txt || fail "$c not kept: $(cat ls2.txt)"; done
expect_grep 'step-7 +proven' ls2.txt "ls shows proven"
[ "$(grep -c ' step-' ls2.txt)" = 4 ] || fail "retention kept other checkpoints: $(cat ls2.txt)"
ok "retention (--keep 3) keeps step-8..10 and the newest proven, step-7"

# A machine that gives up (--max-restarts 1) still marks it; the next machine passes it over.
S2="file://$W/store2"
run_rr n1.log --store "$S2" --checkpoint-dir "$W/d1" -- "$PY" "$POISON" --until 6 --poison-at 6
run_rr n2.log --store "$S2" --checkpoint-dir "$W/d2" --max-restarts 1 -- "$PY" "$POISON" --until 10
expect_eq "$RC" 1 "machine giving up"
expect_grep 'giving up' n2.log "gave up"
[ -e "$W/store2/default/checkpoints/step-6/suspect.json" ] || fail "not marked when giving up"
"$RR_BIN" ls --store "$S2" > ls-n.txt
expect_grep 'step-6 +SUSPECT' ls-n.txt "ls shows the mark"
expect_grep 'suspect: the trainer failed 2 times' ls-n.txt "ls says why"
cp -r "$W/store2" "$W/store3"
run_rr n3.log --store "$S2" --checkpoint-dir "$W/d3" -- "$PY" "$POISON" --until 10
expect_eq "$RC" 0 "the next machine"
expect_grep 'checkpoint step-6 is marked suspect .*passing it over' n3.log "passed over"
expect_grep 'restored step-5' n3.log "restored the one before"
expect_eq "$(grep -c 'poisoned' n3.log)" 0 "no attempt from the poisoned one"
"$RR_BIN" report --store "$S2" --json > report-n.json
"$PY" - report-n.json <<'PY' || fail "report --json: $(cat report-n.json)"
import json, sys
r = json.load(open(sys.argv[1]))
assert [s["checkpoint"] for s in r["suspects"]] == ["step-6"], r["suspects"]
assert any(x.get("passed_over_suspect") == "step-6" for x in r["restores"]), r["restores"]
PY
# The ledger says how each machine ended: n1 and n3 finished, n2 failed.
expect_eq "$(cat "$W"/store2/default/events/*-exit.json | grep -o '"how":"[a-z]*"' | tr '\n' ' ')" \
	'"how":"finished" "how":"failed" "how":"finished" ' "exit events"
ok "giving up still marks step-6; the next machine passes it over and restores step-5"

# The same checkpoint directory again (a pod restarted on its node, a shared directory): the
# giving-up machine's d2 still holds step-6. The start passes it over in the store and sets
# the local copy aside, or the trainer would resume from it (and its commit replace the mark).
cp -r "$W/store3" "$W/store4"
[ -d "$W/d2/step-6" ] || fail "the giving-up machine left no local step-6 to test with"
run_rr n4.log --store "file://$W/store4" --checkpoint-dir "$W/d2" -- "$PY" "$POISON" --until 10
expect_eq "$RC" 0 "the same directory again"
expect_grep 'moved the suspect step-6 aside' n4.log "local copy set aside"
expect_grep 'training from step 5 ' n4.log "resumed from step-5"
expect_eq "$(grep -c 'poisoned' n4.log)" 0 "no attempt from the local poisoned copy"
ok "a local copy of the suspect step-6 (the same directory again) is set aside; step-5 resumed"

# A preemption while the trainer waits to be restarted, after the failures that make step-6
# suspect: the machine leaves without restarting it, and marks step-6 as when giving up.
run_rr p1.log --store "file://$W/store5" --checkpoint-dir "$W/p1" -- "$PY" "$POISON" --until 6 --poison-at 6
expect_eq "$RC" 0 "machine writing the poisoned step-6"
set +e
"$RR_BIN" --store "file://$W/store5" --checkpoint-dir "$W/p2" --suspect-after 1 \
	--max-restarts 3 --drill-file "$W/p2.drill" -- "$PY" "$POISON" --until 10 > p2.log 2>&1 &
pid=$!
set -e
wait_for 30 grep -q 'restarting the trainer in' p2.log || fail "no restart backoff: $(cat p2.log)"
echo '{"kind":"preempt","deadline_in":60}' > "$W/p2.drill"
set +e; wait "$pid"; RC=$?; set -e
expect_eq "$RC" "$RR_PREEMPTED" "preempted in the backoff"
expect_grep 'not restarted: this machine is going' p2.log "not restarted"
[ -e "$W/store5/default/checkpoints/step-6/suspect.json" ] ||
	fail "step-6 not marked when the preemption came in the backoff: $(cat p2.log)"
ok "a preemption in the restart backoff after step-6's failure still marks step-6 suspect"

# unmark clears a mark: the next start takes step-6 again.
"$RR_BIN" unmark --store "file://$W/store3" --checkpoint step-6 2> unmark.log
[ -e "$W/store3/default/checkpoints/step-6/suspect.json" ] && fail "unmark left the mark"
expect_grep 'cleared the suspect mark of step-6' unmark.log "unmark said so"
set +e; "$RR_BIN" unmark --store "file://$W/store3" --checkpoint step-6 2> unmark2.log; rc=$?; set -e
expect_eq "$rc" 125 "unmark of an unmarked checkpoint"
expect_grep 'has no suspect mark' unmark2.log "said why"
"$RR_BIN" ls --store "file://$W/store3" > ls3.txt
expect_no_grep 'SUSPECT' ls3.txt "no mark left"
ok "unmark clears the mark (and refuses a checkpoint without one)"

# A command that cannot start (the shell's 127) has nothing to do with the checkpoint.
cat > missing.sh <<'SH'
exec /nonexistent/trainer
SH
run_rr x.log --store "$S" --checkpoint-dir "$W/c4" --max-restarts 2 -- sh missing.sh
expect_eq "$RC" 127 "status passed through"
expect_eq "$(grep -c 'trainer exited with status 127' x.log)" 3 "three attempts"
ls "$W/store/default/checkpoints/"*/suspect.json >/dev/null 2>&1 && fail "127 marked a checkpoint suspect"
ok "exit 127 three times: nothing marked"

# A preemption in the restart backoff when the suspect checkpoint is this machine's newest,
# its upload still running (the S3 test server holds its manifest): the upload is set aside
# and the checkpoint is not persisted for the notice; persisted, it was the store's newest,
# unmarked (the mark had found it not there), and the next machine crashed on it again.
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/faultlib.sh"
start_s3
s3_env
start_faults
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 's_rc=$?; stop_faults; stop_s3; cleanup $s_rc' EXIT
fault '{"method": "PUT", "path": "step-2/manifest", "nth": 1, "action": "stall", "seconds": 30}'
cat > crash2.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
if [ -z "$RESUME_RUN_RESTORE_DIR" ]; then
	mkdir -p "$d/.step-2.tmp"; head -c 300000 /dev/urandom > "$d/.step-2.tmp/w.bin"
	mv "$d/.step-2.tmp" "$d/step-2"; sleep 0.2
fi
echo "attempt $RESUME_RUN_ATTEMPT crashes"
exit 1
SH
"$RR_BIN" -v --store "s3://$S3_BUCKET/uploading" --checkpoint-dir "$W/u1" --max-restarts 5 \
	--drill-file "$W/u1.drill" -- sh crash2.sh > u1.log 2>&1 &
pid=$!
wait_for 30 grep -q 'restarting the trainer in 4 s' u1.log || { kill -9 $pid; fail "no third backoff: $(cat u1.log)"; }
echo '{"kind":"preempt","deadline_in":60}' > "$W/u1.drill"
set +e; wait "$pid"; RC=$?; set -e
expect_eq "$RC" "$RR_PREEMPTED" "preempted in the backoff"
expect_grep 'newest checkpoint step-2 is suspect: not persisted for the notice' u1.log "said so"
"$RR_BIN" ls --store "s3://$S3_BUCKET/uploading" > u1-ls.out 2>&1 || true
expect_no_grep 'step-2' u1-ls.out "the suspect step-2 in the store"
ok "a suspect checkpoint still uploading at a preemption in the backoff is not persisted for the notice"
finish
