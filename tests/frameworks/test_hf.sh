#!/usr/bin/env bash
# HF transformers' Trainer with resume_run.hf.ResumeRunCallback, installed from the wheel: a
# drill notice mid-run makes the Trainer save its own checkpoint-N/ at the end of the step
# (trainer_state.json last: the commit), the agent makes it durable and exits 75; on a fresh
# directory the restore is found by trainer.train(resume_from_checkpoint=...), whose own resume
# (optimizer, scheduler, RNG states, data position) ends with the weights of an uninterrupted
# run (--precision exact), or within the documented bound (auto). A crash in the middle of the
# Trainer's save is never persisted.
. "$(dirname "$0")/fwlib.sh"
HF=("$FPY" "$T/hf_trainer.py")
STEPS=24
reference hf $STEPS "${HF[@]}"
drill_exact hf $STEPS "${HF[@]}"
expect_eq "$CKPT" "checkpoint-$SAVED" "the Trainer's own checkpoint name"
for f in model.safetensors optimizer.pt scheduler.pt rng_state.pth trainer_state.json; do
	[ -f "$W/hf-b/$CKPT/$f" ] || fail "restored $CKPT lacks the Trainer's $f"
done
drill_auto hf $STEPS "${HF[@]}"
crash hf 3 "${HF[@]}"
# save_strategy="best" with an evaluation every step: the Trainer evaluates before it saves
# and sets should_save from the metric, which never improves here: the notice's save was
# dropped and the Trainer left with none. The callback skips that step's evaluation, so the
# save is made, durable and resumed to the end. (Not compared with an uninterrupted run: the
# skipped evaluation's DataLoader would have drawn from the global RNG, which dropout uses.)
# With save_total_limit=1 the end of train() deleted every checkpoint but the best (step
# 1's) before the agent could store the notice's: the callback lifts the limit when leaving.
drill hfbest $STEPS "${HF[@]}" --save-best --keep-one
expect_eq "$CKPT" "checkpoint-$SAVED" "hfbest: the notice's save"
ok "hfbest: save_strategy best, an evaluation every step, save_total_limit 1: the notice's save at step $SAVED was made, durable, restored, resumed to the end"
finish
