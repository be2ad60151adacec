#!/usr/bin/env bash
# The core promise: a drill notice makes the trainer checkpoint; the checkpoint becomes
# durable in the store; on a "new machine" (checkpoint directory deleted) the same command
# line restores it and the trainer ends in exactly the state of an uninterrupted run
# (bit for bit: --precision exact; the default rounds F32 tensors, see test_tensor_checkpoints).
. "$(dirname "$0")/lib.sh"

STEPS=300
reference_run $STEPS ref.json

# Machine 1: the notice arrives once training is under way.
( wait_for 30 test -d .resume-run/checkpoints/step-50 && touch NOTICE ) &
run_rr m1.log --precision exact --drill-file NOTICE --keep 5 -- "$PY" "$TRAINER" --steps $STEPS --step-time 0.01 --out m1.json
wait
expect_eq "$RC" "$RR_PREEMPTED" "machine 1 exit status"
[ ! -f m1.json ] || fail "machine 1 should have stopped for the preemption, not finished"
expect_grep 'notice: preempt from file' m1.log "notice logged"
# Asked; or, a routine commit landing just before the request, the trainer left on the
# notice file alone and that commit is the notice's (under load: a CI run's ASan build).
expect_grep 'asked the trainer for a checkpoint|the trainer left with no checkpoint answering the notice' \
	m1.log "trainer asked"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' m1.log "durable before exit"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m1.log)
[ -n "$saved" ] && [ "$saved" -gt 50 ] || fail "trainer did not checkpoint on the notice (saved='$saved')"
ok "drill notice: trainer checkpointed at step $saved and the agent made it durable"

# The store holds it as the newest committed checkpoint, LATEST points at it, ledger has it.
"$RR_BIN" ls > ls.out
expect_grep "^\* step-$saved +committed" ls.out "ls shows step-$saved as LATEST and committed"
ls .resume-run/store/default/events | grep -q -- '-notice.json$' || fail "no notice event"
ls .resume-run/store/default/events | grep -q -- '-checkpoint.json$' || fail "no checkpoint event"
"$RR_BIN" verify > verify.out
expect_grep "^step-$saved: ok" verify.out "verify"
ok "store: step-$saved committed, LATEST, ledger and verify agree"

# Machine 2: nothing local survives.
rm -rf .resume-run/checkpoints NOTICE
run_rr m2.log --precision exact -- "$PY" "$TRAINER" --steps $STEPS --step-time 0 --out m2.json
expect_eq "$RC" 0 "machine 2 exit status"
expect_grep "restored step-$saved" m2.log "restore logged"
expect_grep "resumed from step $saved" m2.log "trainer resumed from the saved step"
ls .resume-run/store/default/events | grep -q -- '-restore.json$' || fail "no restore event"
expect_eq "$(json_field m2.json sha256)" "$(json_field ref.json sha256)" "final weights"
expect_eq "$(json_field m2.json loss_history_sha256)" "$(json_field ref.json loss_history_sha256)" "loss history"
ok "new machine: restored step-$saved, resumed, final state identical to an uninterrupted run"

# Restore by hand lands files byte-identical to the trainer's own checkpoint.
last=$(sed -nE 's/^\* (step-[0-9]+) .*/\1/p' <("$RR_BIN" ls))
"$RR_BIN" restore --to by-hand > restore.log 2>&1
diff -r by-hand/"$last" .resume-run/checkpoints/"$last" || fail "restored files differ"
ok "restore --to: $last byte-identical to the trainer's checkpoint"

# Restoring onto a machine that already has it copies nothing.
run_rr m3.log -- "$PY" -c 'pass'
expect_grep "already here and identical; nothing copied" m3.log "no copy when identical"
ok "identical local checkpoint: nothing copied"
finish
