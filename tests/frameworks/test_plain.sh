#!/usr/bin/env bash
# A plain PyTorch loop with resume_run.Checkpointer and resume_run.training, installed from the
# wheel: the model, optimizer, RNG states (dropout) and the sampler's position in one
# safetensors file, committed by a rename; a drill notice, durable, exit 75, a fresh directory
# restores and the loop sees the same batches and random numbers as one that never stopped:
# final weights identical (--precision exact), or the restored state within the documented
# bound (auto). A crash in the middle of the save is never persisted.
. "$(dirname "$0")/fwlib.sh"
P=("$FPY" "$T/plain_trainer.py")
STEPS=24
reference plain $STEPS "${P[@]}"
drill_exact plain $STEPS "${P[@]}"
expect_eq "$CKPT" "step-$SAVED" "the checkpoint's name"
drill_auto plain $STEPS "${P[@]}"
crash plain 3 "${P[@]}"
finish
