#!/usr/bin/env bash
# One checkpoint file saved again and again under one name (torch.save to a temp name, then
# os.replace onto ckpt.pt, as plain PyTorch scripts do; Lightning's last.ckpt alike): every
# commit of it is persisted in its turn, the notice's too, and a new machine resumes from the
# last one, ending bit-identical to a run never stopped (--precision exact). Before, the store
# kept the name's first commit and a new machine went back to it.
. "$(dirname "$0")/lib.sh"
T=("$PY" "$RR_SRC/tests/integration/trainers/fixed_name.py" --steps 150 --every 20)

mkdir -p "$W/ref-ckpt"
env -u RESUME_RUN_RESTORE_DIR RESUME_RUN_CHECKPOINT_DIR="$W/ref-ckpt" "${T[@]}" --out ref.json > ref.log
# Machine 1: the notice once ckpt.pt has been persisted twice (its first commit replaced).
( wait_for 60 sh -c "[ \$(grep -c '^resume-run: persisted ckpt.pt:' m1.log) -ge 2 ]" && touch NOTICE ) &
run_rr m1.log --precision exact --drill-file NOTICE -- "${T[@]}" --step-time 0.03 --out m1.json
wait
expect_eq "$RC" "$RR_PREEMPTED" "machine 1 exit status"
[ ! -f m1.json ] || fail "machine 1 should have stopped for the preemption, not finished"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m1.log)
[ -n "$saved" ] && [ "$saved" -gt 40 ] || fail "the trainer did not checkpoint on the notice (saved='$saved')"
expect_grep 'checkpoint ckpt.pt is durable in the store' m1.log "the notice's commit of ckpt.pt durable"
expect_grep 'ckpt.pt. was committed again: its store copy is this commit now' m1.log "the store's copy replaced"
[ "$(grep -c 'committed again under the same name' m1.log)" = 0 ] || fail "a warning that the commit is not persisted"
ok "machine 1: ckpt.pt saved at steps 20, 40, ... and at $saved for the notice, each persisted"

# Machine 2: nothing local survives.
rm -rf .resume-run/checkpoints NOTICE
run_rr m2.log --precision exact -- "${T[@]}" --out m2.json
expect_eq "$RC" 0 "machine 2 exit status"
expect_grep "resumed from step $saved\$" m2.log "the trainer resumed from the notice's commit"
expect_eq "$(json_field m2.json sha256)" "$(json_field ref.json sha256)" "final weights"
expect_eq "$(json_field m2.json loss_history_sha256)" "$(json_field ref.json loss_history_sha256)" "loss history"
ok "new machine: resumed from step $saved (the last commit of ckpt.pt), final state identical to an uninterrupted run"
finish
