#!/usr/bin/env bash
# A trainer that crashes is restarted from the newest checkpoint with RESUME_RUN_ATTEMPT
# counting up, and still ends in the state of an uninterrupted run; a trainer that keeps
# failing is given up on after --max-restarts, with its status passed through.
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
finish
