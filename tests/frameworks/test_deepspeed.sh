#!/usr/bin/env bash
# DeepSpeed's engine on the CPU, one process under torch.distributed.run, with
# resume_run.agree: a drill notice mid-run, engine.save_checkpoint writes global_stepN/ and
# then `latest` (the commit, a pointer); the agent makes it durable and exits 75; on a fresh
# directory the restore writes `latest` again and engine.load_checkpoint resumes (model,
# optimizer, scheduler; RNG states and data position from its client_state), ending with the
# weights of an uninterrupted run (--precision exact), or within the documented bound (auto). A
# crash in the middle of save_checkpoint is never persisted. DeepSpeed's CPU accelerator
# compiles a communication op on first use: scripts/install-frameworks.sh builds it into the
# frameworks venv (TORCH_EXTENSIONS_DIR).
. "$(dirname "$0")/fwlib.sh"
export DS_ACCELERATOR=cpu
DS=("$FPY" -m torch.distributed.run --standalone --nproc-per-node 1 "$T/deepspeed_trainer.py")
STEPS=24
reference deepspeed $STEPS "${DS[@]}"
drill_exact deepspeed $STEPS "${DS[@]}"
expect_eq "$CKPT" "global_step$SAVED" "DeepSpeed's checkpoint name"
[ "$(cat "$W/deepspeed-b/latest")" = "$CKPT" ] || fail "restore did not write DeepSpeed's latest"
# The restore subcommand puts it back the same way: `latest` beside global_stepN (not under
# --commit rename, which knows no pointer).
"$RR_BIN" restore --store "file://$W/deepspeed-store" --to "$W/r-ds" > r-ds.log 2>&1 || fail "restore deepspeed"
[ -d "$W/r-ds/$CKPT" ] && [ "$(cat "$W/r-ds/latest")" = "$CKPT" ] || fail "restore --to: latest"
"$RR_BIN" restore --commit rename --store "file://$W/deepspeed-store" --to "$W/r-ds2" > r-ds2.log 2>&1 ||
	fail "restore deepspeed under rename"
[ -d "$W/r-ds2/$CKPT" ] && [ ! -e "$W/r-ds2/latest" ] || fail "restore --commit rename wrote latest"
ok "restore subcommand: latest written beside $CKPT (not under --commit rename)"
drill_auto deepspeed $STEPS "${DS[@]}"
crash deepspeed 3 "${DS[@]}"
finish
