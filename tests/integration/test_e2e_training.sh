#!/usr/bin/env bash
# Real training survives a real-looking preemption: a small GPT-style transformer with AdamW
# (Debian's python3-torch, CPU, seeded) trains under resume-run with an s3:// store on the S3
# test server, watching the project's metadata test server. Mid-run the server announces the
# cloud's preemption; the checkpoint becomes durable before the deadline; the "machine" is
# destroyed (agent and trainer SIGKILLed, checkpoint directory deleted); the same command line
# on a new one restores and finishes. --precision exact must end bit-identical to a run never
# interrupted; auto within 1% of its loss, with every restored tensor inside the error bound in
# docs/how-it-works.md, "How checkpoints are made small". For AWS, GCP and Azure notices.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/metalib.sh"
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'e_rc=$?; stop_meta; stop_s3; cleanup $e_rc' EXIT

start_s3
s3_env
unset RESUME_RUN_CLOUD
TRAIN=("$PY" "$RR_SRC/scripts/train_transformer.py" --steps 60 --dim 64 --layers 2 --vocab 512
       --heads 4 --seq 32 --batch 8 --checkpoint-every 10)
"${TRAIN[@]}" --out ref.json > ref.log
ref_loss=$(json_field ref.json loss)

# machine1 CLOUD PRECISION: trains until a checkpoint exists, has the server announce the
# preemption, waits for the agent to call the checkpoint durable, then destroys the machine
# (SIGKILL to the agent and the trainer, checkpoint directory gone; a copy of the checkpoint
# made durable is kept aside as "orig-CLOUD-PRECISION" for the error-bound check).
machine1() {
	local cloud=$1 precision=$2 tag=$1-$2
	local ck="$W/ck-$tag"
	"$RR_BIN" --cloud "$cloud" --metadata-endpoint "$META_URL" --store "s3://$S3_BUCKET/e2e-$tag" \
		--checkpoint-dir "$ck" --precision "$precision" -- "${TRAIN[@]}" --out "out1-$tag.json" \
		> "m1-$tag.log" 2>&1 &
	local agent=$!
	wait_for 120 sh -c "ls '$ck' 2>/dev/null | grep -q '^step-'" || fail "$tag: no checkpoint"
	ctl "announce?in=0"
	wait_for 60 grep -q 'is durable in the store' "m1-$tag.log" || fail "$tag: nothing durable"
	local name
	name=$(sed -nE 's/.*checkpoint (step-[0-9]+) is durable in the store.*/\1/p' "m1-$tag.log" | tail -1)
	expect_grep "checkpoint $name is durable in the store: .* before the deadline" "m1-$tag.log" \
		"$tag: durable before the deadline"
	cp -r "$ck/$name" "orig-$tag" 2>/dev/null || true
	kill -KILL "$agent" 2>/dev/null || true
	pkill -KILL -f "train_transformer.py.*out1-$tag.json" 2>/dev/null || true
	wait "$agent" 2>/dev/null || true
	rm -rf "$ck"
	[ ! -f "out1-$tag.json" ] || fail "$tag: machine 1 finished training; the notice came too late"
	DURABLE=$name
}

# machine2 CLOUD PRECISION: the same command line on a new machine (whose metadata service
# announces nothing) restores and finishes.
machine2() {
	local cloud=$1 precision=$2 tag=$1-$2
	ctl reset
	run_rr "m2-$tag.log" --cloud "$cloud" --metadata-endpoint "$META_URL" \
		--store "s3://$S3_BUCKET/e2e-$tag" --checkpoint-dir "$W/ck2-$tag" --precision "$precision" \
		-- "${TRAIN[@]}" --out "out2-$tag.json"
	expect_eq "$RC" 0 "$tag: machine 2 exit status"
	expect_grep "restored $DURABLE" "m2-$tag.log" "$tag: restored the durable checkpoint"
	expect_grep "resumed from step ${DURABLE#step-}" "m2-$tag.log" "$tag: trainer resumed from it"
}

for cloud in aws gcp azure; do
	start_meta "$cloud"
	machine1 "$cloud" exact
	machine2 "$cloud" exact
	expect_eq "$(json_field "out2-$cloud-exact.json" sha256)" "$(json_field ref.json sha256)" \
		"$cloud: final weights after the preemption"
	ok "$cloud: notice -> $DURABLE durable -> machine destroyed -> restored, final weights bit-identical (exact)"
	if [ "$cloud" = aws ]; then
		machine1 aws auto
		# Every value of the checkpoint as restored from the store, against the files that
		# were made durable (before machine 2's retention deletes that checkpoint).
		"$RR_BIN" restore --store "s3://$S3_BUCKET/e2e-aws-auto" --checkpoint "$DURABLE" \
			--to restored > restore-auto.log 2>&1 || fail "restore of $DURABLE: $(cat restore-auto.log)"
		s3cli s3 cp --quiet "s3://$S3_BUCKET/e2e-aws-auto/default/checkpoints/$DURABLE/manifest.json" manifest-auto.json
		bound=$("$PY" "$RR_SRC/tests/integration/check_tensors.py" orig-aws-auto "restored/$DURABLE" manifest-auto.json) ||
			fail "auto: restored tensors outside the bound: $bound"
		machine2 aws auto
		loss=$(json_field out2-aws-auto.json loss)
		"$PY" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 0.01 * abs(b))" \
			"$loss" "$ref_loss" || fail "auto: final loss $loss not within 1% of $ref_loss"
		ok "aws auto: final loss $loss vs $ref_loss uninterrupted (within 1%); $bound"
	fi
	stop_meta
done
finish
