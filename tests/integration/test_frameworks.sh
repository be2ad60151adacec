#!/usr/bin/env bash
# DeepSpeed as it is (issue 14, README, "Recipes"): its write order and file names
# (global_stepN/, then the `latest` pointer) reproduced with real torch.save
# (trainers/frameworks.py cites DeepSpeed's source), under the default --commit auto with no
# change to the training script: a crash mid-write of the third save is never persisted; a
# new machine restores the newest complete checkpoint where DeepSpeed's own resume logic
# finds it. A reproduction because DeepSpeed does not train on this CPU-only machine; HF
# Trainer, Lightning, accelerate, DCP and plain PyTorch are tested with the real libraries
# (tests/frameworks).
. "$(dirname "$0")/lib.sh"
FW="$RR_SRC/tests/integration/trainers/frameworks.py"

# shape_test SHAPE NEWEST_NAME CHECK...: machine A saves at steps 10 and 20 and crashes
# mid-write of the save at 30; machine B (an empty checkpoint dir) resumes from step 20.
shape_test() {
	local shape=$1 name=$2
	shift 2
	local store="file://$W/s-$shape"
	run_rr "a-$shape.log" --max-restarts 0 --precision exact \
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

	run_rr "b-$shape.log" --precision exact --store "$store" \
		--checkpoint-dir "$W/b-$shape" -- "$PY" "$FW" --shape "$shape" --steps 25
	expect_eq "$RC" 0 "$shape: resumed run's status"
	expect_grep "resumed from step 20 \\($name\\)" "b-$shape.log" "$shape: framework found step 20"
	expect_grep 'done at step 25 w=25.0' "b-$shape.log" "$shape: trained on from the restored state"
	for check in "$@"; do
		( cd "$W/b-$shape" && eval "$check" ) || fail "$shape: restored layout: $check"
	done
	ok "$shape: crash mid-write never persisted; restore found by the framework's own resume"
}

# DeepSpeed: global_stepN/ then latest; restore writes latest again.
# shellcheck disable=SC2016 # the check is evaluated later, in the restored directory
shape_test deepspeed global_step20 'test -d global_step20' '[ "$(cat latest)" = global_step20 ]'
# The restore subcommand puts it back the same way: DeepSpeed's latest beside
# global_step20 (not under --commit rename).
"$RR_BIN" restore --store "file://$W/s-deepspeed" --to "$W/r-ds" > r-ds.log 2>&1 || fail "restore deepspeed"
[ -d "$W/r-ds/global_step20" ] && [ "$(cat "$W/r-ds/latest")" = global_step20 ] || fail "restore: latest"
"$RR_BIN" restore --commit rename --store "file://$W/s-deepspeed" --to "$W/r-ds2" > r-ds2.log 2>&1 ||
	fail "restore deepspeed under rename"
[ -d "$W/r-ds2/global_step20" ] && [ ! -e "$W/r-ds2/latest" ] || fail "restore --commit rename wrote latest"
ok "restore subcommand: latest written for DeepSpeed (not under rename)"

finish
