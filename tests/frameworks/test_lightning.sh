#!/usr/bin/env bash
# Lightning's Trainer with resume_run.lightning.ResumeRunCallback, installed from the wheel,
# under both import names (lightning.pytorch, pytorch_lightning): a drill notice mid-run makes
# the callback save through trainer.save_checkpoint at the end of the batch
# (epoch=E-step=S.ckpt, committed by a rename) and stop the Trainer; the agent makes it durable
# and exits 75; on a fresh directory trainer.fit(ckpt_path=restore_dir()) resumes (model,
# optimizer, scheduler, loops, the resumable loader's position) and ends with the weights of an
# uninterrupted run (--precision exact), or within the documented bound (auto). A crash in the
# middle of Lightning's atomic save (before its temp file is moved onto the name) is never
# persisted. With gradient accumulation the save waits for the optimizer step, and
# min_epochs does not keep a Trainer leaving for a notice.
. "$(dirname "$0")/fwlib.sh"
L=("$FPY" "$T/lightning_trainer.py")
STEPS=24
reference lightning $STEPS "${L[@]}"
drill_exact lightning $STEPS "${L[@]}"
[[ "$CKPT" =~ ^epoch=[0-9]+-step=$SAVED\.ckpt$ ]] || fail "Lightning's checkpoint name: $CKPT"
[ -f "$W/lightning-b/$CKPT" ] || fail "restored $CKPT is not a file"
drill_auto lightning $STEPS "${L[@]}"
# TMPDIR: Lightning's atomic save makes its temp file there and moves it onto the name; in
# the checkpoint dir (README) the half-written temp file sits beside the checkpoints.
TMPDIR="$W/lightning-crash" crash lightning 3 "${L[@]}"
# pytorch_lightning is the same code under its older name: the same model, seed and steps
# end with the same bytes as lightning's uninterrupted run (the pinned 2.6.6), so that run is
# the reference here too, one Lightning start fewer. Should a version make the two differ,
# the drill below fails on it, and this name needs its own reference again.
cp "$W/lightning.ref" "$W/pl.ref"
# pytorch_lightning, and its saves on a thread of their own (AsyncCheckpointIO): the
# callback waits for the file before it syncs and renames it (it crashed on the missing file).
drill_exact pl $STEPS "${L[@]}" --package pytorch_lightning --async-io
# Gradient accumulation (4 batches a step): the notice comes just after step 3, inside the
# next window; the save waits for the window's optimizer step, so the resumed run still ends
# bit-identical (it saved mid-window before, the gradients so far in no checkpoint). And
# min_epochs above what the run reaches: the Trainer still stops for the notice (it trained
# on to the deadline before, should_stop waiting for min_epochs).
reference accum $STEPS "${L[@]}" --accumulate 4 --min-epochs 50
drill_exact accum $STEPS "${L[@]}" --accumulate 4 --min-epochs 50
[ "$SAVED" -gt 3 ] || fail "accum: saved at step $SAVED, not after the window the notice came in"
# ModelCheckpoint(save_last=True) with its temp files on another filesystem (TMPDIR on
# tmpfs): Lightning's fsspec transaction then copies each save onto its name, written in
# place, and last.ckpt is saved again right after each step file. Each is committed once
# whole (before, a copy was never committed: nothing of this run was stored), and the last
# step file is persisted even when last.ckpt, committed after it, came while it waited in
# the queue (before, last.ckpt took its place there, and a new machine resumed from the step
# file before). A new machine resumes from step 8.
tmp=$(mktemp -d /dev/shm/rr-lightning-tmp.XXXXXX)
TMPDIR=$tmp run_rr last.log --precision exact --store "file://$W/last-store" \
	--checkpoint-dir "$W/last-a" -- "${L[@]}" --steps 8 --save-every 2 --save-last --out "$W/last.out"
rm -rf "$tmp"
expect_eq "$RC" 0 "save_last: exit status"
expect_grep '^resume-run: persisted epoch=0-step=8.ckpt:' last.log "save_last: the last step file, copied in place, persisted"
"$RR_BIN" restore --store "file://$W/last-store" --to "$W/last-b" > last-restore.log 2>&1 ||
	fail "save_last: restore: $(tail -n 3 last-restore.log)"
expect_grep 'restored epoch=0-step=8.ckpt' last-restore.log "save_last: a new machine restores step 8"
ok "lightning: save_last=True with TMPDIR on another filesystem: every save (copied in place) committed; a new machine restores step 8"
finish
