#!/usr/bin/env bash
# Trainers as they are (issue 14, README, "The trainer contract" "Committing a checkpoint",
# "Order"): HF Trainer,
# Lightning, DeepSpeed, torch.distributed.checkpoint and plain PyTorch checkpoints, each in
# its framework's own write order and file names with real torch.save
# (trainers/frameworks.py cites the framework source of each), under the default
# --commit auto with no change to the training script. For each: a crash mid-write of the
# third save is never persisted; a new machine restores the newest complete checkpoint
# where the framework's own resume logic finds it.
. "$(dirname "$0")/lib.sh"
FW="$RR_SRC/tests/integration/trainers/frameworks.py"

# shape_test SHAPE NEWEST_NAME CHECK...: machine A saves at steps 10 and 20 and crashes
# mid-write of the save at 30; machine B (an empty checkpoint dir) resumes from step 20.
shape_test() {
	local shape=$1 name=$2
	shift 2
	local store="file://$W/s-$shape"
	# Lightning's fsspec transaction makes its temp file in TMPDIR: put it in the
	# checkpoint dir, so the tmpXXXXXXXX file sits beside the checkpoints (same filesystem,
	# so the move is a rename) and must be ignored there.
	TMPDIR="$W/a-$shape" run_rr "a-$shape.log" --max-restarts 0 --precision exact \
		--store "$store" --checkpoint-dir "$W/a-$shape" -- \
		"$PY" "$FW" --shape "$shape" --steps 100 --save-every 10 --crash-at-save 3
	expect_eq "$RC" 3 "$shape: the trainer's crash status"
	expect_grep 'crash mid-write of ' "a-$shape.log" "$shape: crashed mid-write"
	expect_grep "checkpoint $name committed" "a-$shape.log" "$shape: step 20 committed"
	"$RR_BIN" ls --store "$store" > "ls-$shape.txt" 2>&1
	expect_grep "^\*? *$name +committed" "ls-$shape.txt" "$shape: step 20 stored and committed"
	# nothing of the third save: no step 30 name, no temp file, no pointer, no helper script
	# (names only: the COMMITTED column's clock can read :30)
	awk 'NR > 1 { print ($1 == "*") ? $2 : $1 }' "ls-$shape.txt" > "names-$shape.txt"
	expect_no_grep '30|tmp|latest|zero_to_fp32' "names-$shape.txt" "$shape: half-written save stored"
	expect_no_grep 'committed \(not newer|checkpoint [^ ]*30[^ ]* committed' "a-$shape.log" \
		"$shape: half-written save seen as committed"

	mkdir -p "$W/tmp-$shape"
	TMPDIR="$W/tmp-$shape" run_rr "b-$shape.log" --precision exact --store "$store" \
		--checkpoint-dir "$W/b-$shape" -- "$PY" "$FW" --shape "$shape" --steps 25
	expect_eq "$RC" 0 "$shape: resumed run's status"
	expect_grep "resumed from step 20 \\($name\\)" "b-$shape.log" "$shape: framework found step 20"
	expect_grep 'done at step 25 w=25.0' "b-$shape.log" "$shape: trained on from the restored state"
	for check in "$@"; do
		( cd "$W/b-$shape" && eval "$check" ) || fail "$shape: restored layout: $check"
	done
	ok "$shape: crash mid-write never persisted; restore found by the framework's own resume"
}

# HF Trainer: checkpoint-N/ written in place, trainer_state.json last;
# get_last_checkpoint's ^checkpoint\-(\d+)$ finds it in output_dir.
shape_test hf checkpoint-20 'test -d checkpoint-20' 'test -f checkpoint-20/trainer_state.json' \
	'test -f checkpoint-20/model.safetensors' 'test -f checkpoint-20/rng_state.pth'
# Lightning: one .ckpt file via a temp file + move; restored as that file, and
# RESUME_RUN_RESTORE_DIR names the file.
shape_test lightning 'epoch=2-step=20.ckpt' 'test -f "epoch=2-step=20.ckpt"'
# DeepSpeed: global_stepN/ then latest; restore writes latest again.
# shellcheck disable=SC2016 # the check is evaluated later, in the restored directory
shape_test deepspeed global_step20 'test -d global_step20' '[ "$(cat latest)" = global_step20 ]'
# DCP: .distcp shards then .metadata (via .metadata.tmp and a rename).
shape_test dcp step-20 'test -f step-20/.metadata' 'test -f step-20/__0_0.distcp'
# plain PyTorch: torch.save to a temp name, os.replace onto the final name.
shape_test plain model-step-20.pt 'test -f model-step-20.pt'

# The restore subcommand puts them back the same way: DeepSpeed's latest beside
# global_step20 (not under --commit rename), Lightning's .ckpt as a file.
"$RR_BIN" restore --store "file://$W/s-deepspeed" --to "$W/r-ds" > r-ds.log 2>&1 || fail "restore deepspeed"
[ -d "$W/r-ds/global_step20" ] && [ "$(cat "$W/r-ds/latest")" = global_step20 ] || fail "restore: latest"
"$RR_BIN" restore --commit rename --store "file://$W/s-deepspeed" --to "$W/r-ds2" > r-ds2.log 2>&1 ||
	fail "restore deepspeed under rename"
[ -d "$W/r-ds2/global_step20" ] && [ ! -e "$W/r-ds2/latest" ] || fail "restore --commit rename wrote latest"
"$RR_BIN" restore --store "file://$W/s-lightning" --to "$W/r-l" > r-l.log 2>&1 || fail "restore lightning"
[ -f "$W/r-l/epoch=2-step=20.ckpt" ] || fail "restore: the .ckpt is not a file"
"$PY" -c 'import sys, torch; assert torch.load(sys.argv[1])["global_step"] == 20' "$W/r-l/epoch=2-step=20.ckpt" ||
	fail "restored .ckpt does not load"
ok "restore subcommand: latest written for DeepSpeed (not under rename), .ckpt restored as a file"

finish
