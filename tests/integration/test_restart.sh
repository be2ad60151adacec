#!/usr/bin/env bash
# A trainer that crashes is restarted from the newest checkpoint with RESUME_RUN_ATTEMPT
# counting up, and still ends in the state of an uninterrupted run; a trainer that keeps
# failing is given up on after --max-restarts, with its status passed through. A notice
# while a failed trainer waits to be restarted: a preemption ends the run there (no restart;
# the newest checkpoint made durable first), a rebalance is answered by the restarted trainer;
# and a precaution whose request goes unanswered does not stop --every for good.
. "$(dirname "$0")/lib.sh"

STEPS=120
reference_run $STEPS ref.json
run_rr crash.log -- "$PY" "$TRAINER" --steps $STEPS --step-time 0 --checkpoint-every 50 --fail-at-step 70 --out out.json
expect_eq "$RC" 0 "exit status after a restart"
expect_grep 'trainer exited with status 3' crash.log "crash seen"
expect_grep 'restarting the trainer in 1 s \(restart 1 of 3\) from step-50' crash.log "restart from newest"
expect_grep 'training from step 50 to 120 \(attempt 1\)' crash.log "attempt 1 resumed at step 50"
ls .resume-run/store/default/events | grep -q -- '-restart.json$' || fail "no restart event in the ledger"
expect_eq "$(json_field out.json sha256)" "$(json_field ref.json sha256)" "final weights after restart"
ok "crash at step 70: restarted from step-50 (attempt 1), final state identical"

cat > always_fails.sh <<'SH'
echo "attempt=$RESUME_RUN_ATTEMPT" >> attempts.txt
exit 9
SH
run_rr fail.log --max-restarts 2 --store "file://$W/s2" --checkpoint-dir "$W/c2" -- sh always_fails.sh
expect_eq "$RC" 9 "status after giving up"
expect_eq "$(tr '\n' ' ' < attempts.txt)" "attempt=0 attempt=1 attempt=2 " "attempts"
expect_grep 'giving up' fail.log "gave up"
ok "always failing: 3 attempts (0,1,2), then status 9 passed through"

# SIGTERM while waiting to restart: no new attempt, the agent leaves.
rm -f attempts.txt
"$RR_BIN" --max-restarts 5 --store "file://$W/s3" --checkpoint-dir "$W/c3" -- sh always_fails.sh > term.log 2>&1 &
agent=$!
wait_for 30 grep -q 'restarting the trainer in 1 s' term.log || fail "no restart scheduled"
kill -TERM $agent
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" "$RR_PREEMPTED" "exit status"
expect_eq "$(tr '\n' ' ' < attempts.txt)" "attempt=0 " "attempts"
expect_grep 'SIGTERM with no trainer running: leaving' term.log "said why"
ok "SIGTERM during the restart backoff: no new attempt, exit $RR_PREEMPTED (work unfinished)"

# A preemption notice during the restart backoff: the machine is going, so the trainer is
# not started again; its newest checkpoint, whose persist had failed (the store's chunks/
# was a file), is persisted ahead of everything else, then the agent leaves with 75. The
# trainer fails twice (the second backoff is 2 s, the time the test has to announce it).
rm -f attempts.txt
mkdir -p s5/default && : > s5/default/chunks
cat > commits_then_fails.sh <<'SH'
echo "attempt=$RESUME_RUN_ATTEMPT" >> attempts.txt
[ "$RESUME_RUN_ATTEMPT" = 0 ] || exit 1
mkdir "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp"
echo weights > "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp/w.bin"
mv "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp" "$RESUME_RUN_CHECKPOINT_DIR/step-1"
sleep 1
exit 1
SH
"$RR_BIN" --max-restarts 3 --drill-file PREEMPT --store "file://$W/s5" --checkpoint-dir "$W/c5" \
	-- sh commits_then_fails.sh > preempt.log 2>&1 &
agent=$!
wait_for 30 grep -q 'restarting the trainer in 2 s' preempt.log || { kill -9 $agent; fail "no second restart scheduled"; }
grep -q 'persist of step-1 failed' preempt.log || { kill -9 $agent; fail "step-1's persist did not fail"; }
rm s5/default/chunks
printf '{"kind":"preempt","deadline_in":60}' > PREEMPT
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" "$RR_PREEMPTED" "preemption during the backoff: exit status"
expect_eq "$(tr '\n' ' ' < attempts.txt)" "attempt=0 attempt=1 " "attempts"
expect_grep 'the trainer is not restarted: this machine is going' preempt.log "said why"
expect_grep 'checkpoint step-1 is durable in the store: [0-9.]+ s after the notice' preempt.log "step-1 made durable"
"$RR_BIN" ls --store "file://$W/s5" > ls5.out 2>&1 || fail "ls: $(cat ls5.out)"
expect_grep '^\* step-1 +committed' ls5.out "step-1 in the store"
ok "preemption during the restart backoff: no new attempt, step-1 (its persist had failed) made durable, exit $RR_PREEMPTED"

# SIGTERM during the restart backoff with --preempted-exit-code 0 ("the trainer's own
# status"): the failed attempt's 3, not 143 for the signal.
cat > fails3.sh <<'SH'
exit 3
SH
"$RR_BIN" --max-restarts 3 --preempted-exit-code 0 --store "file://$W/s6" --checkpoint-dir "$W/c6" \
	-- sh fails3.sh > backoff-term.log 2>&1 &
agent=$!
wait_for 30 grep -q 'restarting the trainer in 2 s' backoff-term.log || { kill -9 $agent; fail "no second restart scheduled"; }
kill -TERM $agent
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" 3 "SIGTERM during the backoff, --preempted-exit-code 0: exit status"
ok "SIGTERM during the restart backoff with --preempted-exit-code 0: the failed attempt's status (3)"

# A rebalance recommendation during the restart backoff: the restarted trainer (which
# checkpoints only when asked) is asked once it runs, its checkpoint is made durable, and
# training goes on to the end. Attempt 1 fails at once, so the notice comes in the 2 s before
# attempt 2.
rm -f REBALANCE
cat > rebalance_then.sh <<SH
[ "\$RESUME_RUN_ATTEMPT" != 1 ] || exit 1
exec "$PY" "$TRAINER" --steps $STEPS --step-time 0.02 --checkpoint-every 0 --fail-at-step 30 --out out.json
SH
"$RR_BIN" --max-restarts 3 --drill-file REBALANCE --store "file://$W/s6" --checkpoint-dir "$W/c6" \
	-- sh rebalance_then.sh > rebalance.log 2>&1 &
agent=$!
wait_for 30 grep -q 'restarting the trainer in 2 s' rebalance.log || { kill -9 $agent; fail "no second restart scheduled"; }
printf '{"kind":"rebalance"}' > REBALANCE
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" 0 "rebalance during the backoff: exit status"
expect_grep 'notice: rebalance from file' rebalance.log "the notice was seen"
sed -n '/attempt 2)/,$p' rebalance.log > after2.log
expect_grep 'asked the trainer for a checkpoint' after2.log "the restarted trainer was asked"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' after2.log "its checkpoint made durable"
expect_grep 'rebalance notice handled; training goes on' after2.log "the notice is over"
expect_eq "$(json_field out.json sha256)" "$(json_field ref.json sha256)" "final weights"
ok "rebalance during the restart backoff: the restarted trainer answered it, training finished"

# A rebalance whose request the trainer drops (it answers only the second SIGUSR1): --every
# goes on asking while the notice stands, and that periodic checkpoint answers it.
rm -f REBALANCE
printf '{"kind":"rebalance"}' > REBALANCE.json
cat > drops_first.sh <<'SH'
trap 'n=$((${n:-0} + 1)); [ $n -lt 2 ] || want=1' USR1
cp REBALANCE.json REBALANCE
while [ -z "${want:-}" ]; do sleep 0.05; done
mkdir "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp"
echo weights > "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp/w.bin"
mv "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp" "$RESUME_RUN_CHECKPOINT_DIR/step-1"
SH
"$RR_BIN" --every 2s --drill-file REBALANCE --store "file://$W/s7" --checkpoint-dir "$W/c7" \
	-- sh drops_first.sh > every.log 2>&1 &
agent=$!
wait_for 30 grep -q 'checkpoint step-1 committed' every.log || { kill -9 $agent; fail "--every never asked again while the rebalance stood"; }
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" 0 "dropped rebalance request: exit status"
expect_grep 'rebalance notice handled' every.log "the periodic checkpoint answered the notice"
ok "a rebalance request the trainer dropped: --every asked again, its checkpoint answered the notice"

# A restart whose command is gone (a venv or script redeployed) ends the run with 127, once:
# the failed attempt's exit is not taken again for another (a phantom "restart 2 of 3" in
# the log and the ledger). The persist of the checkpoint it committed is still running then:
# a process holds every lock of the file store, so the loop goes on after the failed start.
hold_store_locks "$W/s8" 4
cat > gone.sh <<'SH'
#!/bin/sh
mkdir "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp"
echo weights > "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp/w.bin"
mv "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp" "$RESUME_RUN_CHECKPOINT_DIR/step-1"
rm -f "$0"
exit 1
SH
chmod +x gone.sh
run_rr gone.log --max-restarts 3 --store "file://$W/s8" --checkpoint-dir "$W/c8" -- "$W/gone.sh"
wait "$LOCKER" || true
expect_eq "$RC" 127 "a restart whose command is gone: exit status"
expect_grep "cannot run '$W/gone.sh': No such file" gone.log "the failed start was said"
expect_eq "$(grep -c 'trainer exited with status' gone.log)" 1 "exits logged"
expect_no_grep 'restart 2 of' gone.log "no second restart"
ok "a restart whose command is gone: 127, the failed attempt's exit taken once"
finish
