#!/usr/bin/env bash
# torch.distributed.checkpoint under torch.distributed.run (torch >= 2.2: each worker in a
# session of its own) with resume_run.dcp.ResumeRun, installed from the wheel, two workers over
# gloo: the checkpoint signal reaches both workers (not the launcher, which has no handler for
# it), they agree on the step (all-reduce of the flags) and dcp.save writes step-N (every
# rank's shard, then .metadata: the commit); the agent makes it durable and exits 75; on a
# fresh directory dcp.load of the restored step-N ends with the weights of an uninterrupted run
# (--precision exact), or within the documented bound (auto). Periodic saves use
# dcp.async_save. A crash of the coordinator between the shards and .metadata is never
# persisted.
. "$(dirname "$0")/fwlib.sh"
D=("$FPY" -m torch.distributed.run --standalone --nproc-per-node 2 "$T/dcp_trainer.py")
STEPS=24
reference dcp $STEPS "${D[@]}"
drill_exact dcp $STEPS "${D[@]}"
expect_eq "$CKPT" "step-$SAVED" "the checkpoint's name"
for f in .metadata __0_0.distcp __1_0.distcp; do
	[ -f "$W/dcp-b/$CKPT/$f" ] || fail "restored $CKPT lacks DCP's $f"
done
expect_grep "^rank 1: saved at step $SAVED$" dcp-a.log "rank 1 saved the same step"
# The launcher's workers are in sessions of their own; the signal reached them, not the
# launcher (it has no handler, and would have died of it): torchrun itself exited 0.
expect_grep 'trainer exited with status 0$' dcp-a.log "torchrun's own status after the notice"
drill_auto dcp $STEPS "${D[@]}"
crash dcp 3 "${D[@]}"
finish
