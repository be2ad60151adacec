#!/usr/bin/env bash
# The chaos soak (README, "Failure modes"): a real PyTorch trainer under the agent on the S3
# test server through the fault proxy (503s, connections reset after the server applied a
# write, answers cut short), SOAK_CYCLES machines (default 30), each ended by a random notice
# (preempt, rebalance, terminate) or a SIGKILL of the agent (while restoring, persisting, or
# the trainer saving) or of the trainer, then lost. Each next machine restores a checkpoint no
# older than the newest one logged durable; the last one trains to the end and its weights
# equal an uninterrupted run's bit for bit; verify is clean; after gc the store holds only
# what the kept checkpoints name; the ledger's exit events say how each machine ended.
# tests/integration/chaos_soak.py is the driver.
# By hand, longer: SOAK_CYCLES=300 SOAK_SEED=7 bash tests/integration/test_chaos_soak.sh
. "$(dirname "$0")/lib.sh"
# s3rver: the fault proxy is built around it, and its objects' times are their files' (aged
# before gc, whose grace is at least 10 minutes).
S3_SERVER=s3rver
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/faultlib.sh"

"$PY" -c 'import torch, boto3' 2>/dev/null || fail "python3-torch and python3-boto3 are needed (scripts/install-deps.sh test)"
start_s3
s3_env
start_faults
export RESUME_RUN_CLOUD=none
# Faults all along, on every machine: the store's retries must carry each one.
fault '{"method": "PUT", "path": "/chunks/", "every": 13, "action": "error", "status": 503}'
fault '{"method": "PUT", "every": 29, "action": "reset_after_apply"}'
fault '{"method": "GET", "path": "/chunks/", "every": 17, "action": "reset_mid_answer"}'

# 30 machines; an ASan build (the test command's second pass) runs 10: its agent's errors
# show in any cycle, and the whole command stays within its time.
cycles=${SOAK_CYCLES:-30}
if [ -z "${SOAK_CYCLES:-}" ] && ldd "$RR_BIN" 2>/dev/null | grep -q libasan; then
	cycles=10
fi
"$PY" "$RR_SRC/tests/integration/chaos_soak.py" --bin "$RR_BIN" \
	--trainer "$RR_SRC/tests/integration/trainers/chaos_trainer.py" \
	--store "s3://$S3_BUCKET/soak" --direct "$S3_DIRECT" --s3-dir "$S3_DIR" --work "$W" \
	--cycles "$cycles" --seed "${SOAK_SEED:-26}" | tee soak.txt
grep -q '^soak: ' soak.txt || fail "the soak did not finish"
ok "$(sed -n 's/^soak: //p' soak.txt)"
finish
