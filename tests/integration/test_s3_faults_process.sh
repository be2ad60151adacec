#!/usr/bin/env bash
# The fault matrix, part 3 (the list of every case and where it is tested is at the top of
# test_s3_faults.sh): the processes fail rather than the store. The trainer killed
# mid-write, the agent SIGKILLed mid-persist and started again on the same store, a notice
# during a persist, a routine commit landing just as the trainer is asked for the notice
# checkpoint, a second notice during the notice persist. Every case ends with the store
# checked: the newest checkpoint that should be there is LATEST, nothing is called damaged,
# and it restores byte-identical.
# The S3 server: s3rver, not SeaweedFS (tests/integration/s3lib.sh): fault injection through tests/faults/proxy.py, which is built around s3rver.
S3_SERVER=s3rver
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/faultlib.sh"

start_s3
s3_env
start_faults
export RESUME_RUN_CLOUD=none

# --- the trainer killed mid-write: step-3 is half written when it dies ---
cat > train-killed.sh <<SH
#!/usr/bin/env bash
. "$RR_SRC/tests/integration/faultlib_commit.sh"
commit_step "$W/ckpt-killed" 1; sleep 0.7
commit_step "$W/ckpt-killed" 2; sleep 1.5
mkdir -p "$W/ckpt-killed/.step-3.tmp"; head -c 200000 /dev/urandom > "$W/ckpt-killed/.step-3.tmp/f1.bin"
kill -KILL \$\$
SH
chmod +x train-killed.sh
run_rr killed.log -v --max-restarts 0 --store "s3://$S3_BUCKET/killed" --checkpoint-dir ckpt-killed -- ./train-killed.sh
expect_eq "$RC" 137 "killed trainer: status passed through"
expect_grep 'persisted step-2:' killed.log "killed trainer: step-2 persisted"
[ -z "$(s3d s3 ls --recursive "s3://$S3_BUCKET/killed/default/checkpoints/step-3")" ] || fail "killed trainer: half-written step-3 in the store"
rm -rf ckpt-killed/.step-3.tmp
check_store killed "$W/ckpt-killed"
ok "trainer SIGKILLed while writing step-3: status 137, nothing of step-3 stored, step-2 is LATEST and restores identical"

# --- the agent SIGKILLed mid-persist, then started again on the same store ---
fault '{"method": "PUT", "path": "/chunks/", "action": "stall", "seconds": 2}'
trainer_script train-agentkill.sh "$W/ckpt-agentkill" 1
cat >> train-agentkill.sh <<'SH'
sleep 30
SH
"$RR_BIN" -v --threads 1 --store "s3://$S3_BUCKET/agentkill" --checkpoint-dir ckpt-agentkill -- ./train-agentkill.sh > agentkill.log 2>&1 &
agent=$!
BG_PIDS=$agent
wait_for 30 grep -q 'persisting step-1' agentkill.log || fail "agentkill: no persist started"
fired_at_least() { [ "$(fired)" -ge "$1" ]; }
wait_for 30 fired_at_least 2 || fail "agentkill: no chunk PUT reached the proxy"
trainer=$(sed -nE 's/.*started .*\(pid ([0-9]+),.*/\1/p' agentkill.log)
kill -KILL $agent; wait $agent 2>/dev/null || true
BG_PIDS=
# the trainer runs in its own process group, which outlives the agent: end it by its id
[ -z "$trainer" ] || kill -KILL -- "-$trainer" 2>/dev/null || kill -KILL "$trainer" 2>/dev/null || true
no_faults
[ -z "$(s3d s3 ls --recursive "s3://$S3_BUCKET/agentkill/default/checkpoints/")" ] || fail "agentkill: a manifest exists after the kill"
run_rr agentkill-verify.log verify --store "s3://$S3_BUCKET/agentkill"
expect_no_grep 'DAMAGED' agentkill-verify.log "agentkill: nothing damaged after the kill"
run_rr agentkill2.log -v --store "s3://$S3_BUCKET/agentkill" --checkpoint-dir ckpt-agentkill -- true
expect_eq "$RC" 0 "agentkill: the restarted agent's status"
expect_grep 'persisted step-1:' agentkill2.log "agentkill: the restarted agent persisted step-1"
check_store agentkill "$W/ckpt-agentkill"
ok "agent SIGKILLed mid-persist: no manifest, nothing damaged; restarted on the same store it persisted step-1, restores identical"

# --- a notice during a persist: every chunk PUT is held 2 s, so the first routine persist
# (step-20, or a later step when the agent first looks after the trainer has committed
# more than one) is still running when the notice comes; the notice checkpoint is made
# durable after it, and it is what a new machine restores. Were the persist never seen, the
# watcher still writes the notice (and says so), so the trainer's 100000 steps never run out
# the test's time ---
fault '{"method": "PUT", "path": "/chunks/", "action": "stall", "seconds": 2}'
first_persist() { grep -qE 'persisting step-[0-9]+$' notice.log 2>/dev/null; }
(
	wait_for 60 first_persist && touch NOTICE && exit 0
	touch NOTICE; exit 1
) &
watcher=$!
run_rr notice.log -v --precision exact --drill-file NOTICE --keep 5 --checkpoint-dir ckpt-notice \
	--store "s3://$S3_BUCKET/notice" -- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 \
	--checkpoint-every 20 --keep-local 0
wait $watcher || fail "notice: no routine persist was seen in 60 s"
no_faults
expect_eq "$RC" "${RR_PREEMPTED:-0}" "notice: agent status after the notice"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' notice.log)
[ -n "$saved" ] || fail "notice: the trainer did not checkpoint on the notice"
routine=$(sed -nE 's/.*persisting (step-[0-9]+)$/\1/p' notice.log | head -n 1)
line_of() { grep -nE -m 1 -- "$1" notice.log | cut -d: -f1 || true; }
started=$(line_of "persisting $routine\$")
notice_line=$(line_of 'notice: preempt from file')
ended=$(line_of "persist(ed)? (of )?${routine}[: ]")
[ -n "$started" ] && [ -n "$notice_line" ] && [ "$started" -lt "$notice_line" ] &&
	{ [ -z "$ended" ] || [ "$notice_line" -lt "$ended" ]; } ||
	fail "notice: the notice did not come during the persist of $routine"
# the routine persist either finished first or was set aside for the notice checkpoint
grep -qE "persisted $routine:|persist of $routine set aside" notice.log ||
	fail "notice: $routine's persist neither ended nor was set aside"
expect_grep "checkpoint step-$saved is durable in the store" notice.log "notice: the notice checkpoint is durable"
check_store notice "$W/ckpt-notice"
expect_grep "^\* step-$saved " notice-ls.out "notice: LATEST is the notice checkpoint"
ok "notice during the persist of $routine ($(grep -oE "persisted $routine|$routine set aside" notice.log | head -n 1)): step-$saved durable $(sed -nE "s/.*step-$saved is durable in the store: (.*) after the notice.*/\1/p" notice.log) after the notice, LATEST, restores identical"

# --- a routine commit lands just as the trainer is asked for the notice checkpoint: the
# notice waits for the trainer's real answer, the newest commit, not for the routine one
# (which the newer one replaces in the persist queue) ---
cat > train-race.sh <<SH
#!/usr/bin/env bash
. "$RR_SRC/tests/integration/faultlib_commit.sh"
commit_step "$W/ckpt-race" 1
answer() { commit_step "$W/ckpt-race" 2; sleep 0.3; commit_step "$W/ckpt-race" 3; echo "answered with step-3"; exit 0; }
trap answer USR1
while :; do sleep 0.1; done
SH
chmod +x train-race.sh
fault '{"method": "PUT", "path": "/chunks/", "action": "stall", "seconds": 3}'
( wait_for 60 grep -q 'persisting step-1' race.log && touch NOTICE-race && exit 0
	touch NOTICE-race; exit 1 ) &
watcher=$!
run_rr race.log -v --drill-file NOTICE-race --checkpoint-dir ckpt-race --store "s3://$S3_BUCKET/race" -- ./train-race.sh
wait $watcher || fail "race: the persist of step-1 was never seen"
no_faults
expect_eq "$RC" "${RR_PREEMPTED:-0}" "race: agent status after the notice"
expect_grep 'answered with step-3' race.log "race: the trainer answered"
expect_grep 'checkpoint step-3 is durable in the store' race.log "race: the notice's checkpoint is the newest"
expect_no_grep 'checkpoint step-2 is durable in the store' race.log "race: the routine commit is not taken for the answer"
check_store race "$W/ckpt-race"
ok "a commit just as the trainer is asked, then its answer: the notice waits for step-3, durable, LATEST, restores identical"

# --- a second notice (SIGTERM to the agent) while the first notice's checkpoint is being
# persisted: the persist is not abandoned, the checkpoint becomes durable and restores ---
fault '{"method": "PUT", "path": "/chunks/", "action": "stall", "seconds": 2}'
( wait_for 60 grep -q 'training from step' second.log; sleep 0.5; touch NOTICE-second ) &
"$RR_BIN" -v --precision exact --drill-file NOTICE-second --checkpoint-dir ckpt-second \
	--store "s3://$S3_BUCKET/second" -- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 \
	--checkpoint-every 0 --keep-local 0 > second.log 2>&1 &
agent=$!
BG_PIDS=$agent
wait_for 60 grep -q 'persisting step-[0-9]* (notice' second.log || fail "second: the notice checkpoint's persist did not start"
kill -TERM $agent
set +e; wait $agent; RC=$?; set -e
BG_PIDS=
no_faults
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' second.log)
[ -n "$saved" ] || fail "second: the trainer did not checkpoint on the notice"
expect_grep "checkpoint step-$saved is durable in the store" second.log "second: the notice checkpoint became durable"
check_store second "$W/ckpt-second"
ok "second notice (SIGTERM) during the notice checkpoint's persist: status $RC, step-$saved still made durable, LATEST, restores identical"
finish
