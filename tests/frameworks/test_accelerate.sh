#!/usr/bin/env bash
# accelerate with resume_run.accelerate.ResumeRun, installed from the wheel, two processes
# under torch.distributed.run (gloo): a drill notice mid-run, both processes agree on the step,
# Accelerator.save_state writes .step-N.tmp/ and the main process renames it to step-N (the
# commit); the agent makes it durable and exits 75; on a fresh directory Accelerator.load_state
# of the restored step-N (model, optimizer, scheduler, RNG states) and skip_first_batches end
# with the weights of an uninterrupted run (--precision exact), or within the documented bound
# (auto). A crash in the middle of save_state is never persisted.
. "$(dirname "$0")/fwlib.sh"
A=("$FPY" -m torch.distributed.run --standalone --nproc-per-node 2 "$T/accelerate_trainer.py")
STEPS=24
reference accelerate $STEPS "${A[@]}"
# With ProjectConfiguration(automatic_checkpoint_naming=True), which made save_state ignore
# the directory it was given (the notice's save crashed on the missing temp directory).
drill_exact accelerate $STEPS "${A[@]}" --auto-naming
expect_eq "$CKPT" "step-$SAVED" "the checkpoint's name"
for f in model.safetensors optimizer.bin scheduler.bin random_states_0.pkl random_states_1.pkl; do
	[ -f "$W/accelerate-b/$CKPT/$f" ] || fail "restored $CKPT lacks accelerate's $f"
done
drill_auto accelerate $STEPS "${A[@]}"
crash accelerate 3 "${A[@]}"
finish
