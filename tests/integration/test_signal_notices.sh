#!/usr/bin/env bash
# SIGTERM/SIGINT to the agent is a notice: checkpoint, persist, then SIGTERM to the trainer;
# at the deadline SIGTERM goes anyway; a second SIGTERM forwards at once. The checkpoint
# signal reaches only processes that handle it, and waits for a handler to exist.
. "$(dirname "$0")/lib.sh"
T="$RR_SRC/tests/integration/trainers"

# 1. SIGTERM to the agent while a cooperative trainer runs.
"$RR_BIN" -- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 > term.log 2>&1 &
agent=$!
wait_for 30 grep -q 'checkpoint step-50 committed' term.log || fail "training did not start"
kill -TERM $agent
set +e; wait $agent; rc=$?; set -e
# The trainer leaves after its checkpoint; the agent's SIGTERM (sent once the checkpoint is
# durable) may reach it first. Either way a notice stopped it: the preempted status.
expect_eq "$rc" "$RR_PREEMPTED" "exit status"
expect_grep 'notice: terminate from signal, deadline in 25 s' term.log "notice from SIGTERM"
expect_grep 'checkpoint step-[0-9]+ is durable in the store: [0-9.]+ s after the notice, [0-9.]+ s before the deadline' term.log "durable before the deadline, with timings"
ok "SIGTERM: checkpoint durable before the deadline, trainer left cleanly"

# 2. A trainer that never checkpoints gets SIGTERM at the deadline.
"$RR_BIN" --grace 2 --store "file://$W/s2" --checkpoint-dir "$W/c2" -- "$PY" "$T/stubborn.py" > deadline.log 2>&1 &
agent=$!
wait_for 30 grep -q 'handlers installed' deadline.log || fail "stubborn trainer did not start"
kill -TERM $agent
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" "$RR_PREEMPTED" "exit status"
expect_grep "leaving with status $RR_PREEMPTED: stopped by a notice \\(trainer.s own status 143\\)" deadline.log "trainer's own status logged"
expect_grep 'deadline reached before the checkpoint was durable; sending SIGTERM' deadline.log "deadline"
expect_grep 'trainer got SIGTERM after 1 checkpoint request' deadline.log "asked once, then SIGTERM"
ok "no checkpoint: SIGTERM forwarded at the deadline, trainer 143, agent $RR_PREEMPTED"

# 3. A second SIGTERM does not wait for the (long) deadline.
"$RR_BIN" --grace 600 --store "file://$W/s3" --checkpoint-dir "$W/c3" -- "$PY" "$T/stubborn.py" > second.log 2>&1 &
agent=$!
wait_for 30 grep -q 'handlers installed' second.log || fail "stubborn trainer did not start"
kill -TERM $agent
wait_for 10 grep -q 'asked the trainer' second.log || fail "no checkpoint request"
kill -TERM $agent
wait_for 30 sh -c "! kill -0 $agent 2>/dev/null" || fail "agent still waiting after a second SIGTERM"
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" "$RR_PREEMPTED" "exit status"
expect_grep 'SIGTERM again: no more waiting' second.log "second SIGTERM"
ok "second SIGTERM forwarded at once"

# 4. Only processes with a handler get the checkpoint signal: the sh wrapper survives. No
# routine commits (--checkpoint-every 0): one just before the request would let the trainer
# leave on the notice file alone, unasked (a CI run under ASan), and prove nothing here.
( wait_for 30 grep -q 'training from step' wrapper.log && sleep 0.5 && touch NOTICE4 ) &
run_rr wrapper.log --drill-file NOTICE4 --signal USR2 --store "file://$W/s4" --checkpoint-dir "$W/c4" -- \
	sh -c "'$PY' '$TRAINER' --steps 100000 --step-time 0.01 --checkpoint-every 0; echo wrapper survived with \$?"
wait
expect_eq "$RC" "$RR_PREEMPTED" "exit status"
expect_grep 'asked the trainer for a checkpoint' wrapper.log "asked"
expect_grep 'checkpointed at step [0-9]+, exiting for preemption' wrapper.log "python (handler) got SIGUSR2"
expect_grep 'wrapper survived with 0' wrapper.log "sh (no handler) was not signalled"
ok "checkpoint signal (USR2) reached the handler, not the sh wrapper"

# 5. A notice before the trainer has a handler waits for one instead of killing it. (The
# file is created once the agent runs: one there before its start is a leftover, no notice.)
( wait_for 30 grep -q '^resume-run: started ' late.log && touch NOTICE5 ) &
run_rr late.log --drill-file NOTICE5 --store "file://$W/s5" --checkpoint-dir "$W/c5" -- "$PY" "$T/late_handler.py" 3.0
wait
expect_eq "$RC" "$RR_PREEMPTED" "exit status"
expect_grep 'no trainer process handles SIGUSR1 yet; the checkpoint request waits' late.log "waiting logged"
expect_grep 'checkpointed on request' late.log "delivered once the handler existed"
expect_grep 'checkpoint step-1 is durable' late.log "persisted"
ok "early notice waited for the handler, then the checkpoint was made durable"

# 6. The trainer finishes (exit 0, its last checkpoint durable) and SIGTERM comes before the
# agent has seen the exit: both wait for it at once (the agent stopped while they come). The
# trainer left on its own, so its 0 stands; it was taken for a trainer stopped by the
# signal (75), and the job ran again.
cat > finish_then.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
mkdir -p "$d/.step-1.tmp"; echo w > "$d/.step-1.tmp/w.bin"; mv "$d/.step-1.tmp" "$d/step-1"
while [ ! -e GO ]; do sleep 0.05; done
exit 0
SH
"$RR_BIN" -v --checkpoint-dir "$W/c6" --store "file://$W/s6" -- sh finish_then.sh > batch.log 2>&1 &
agent=$!
wait_for 30 grep -q 'persisted step-1:' batch.log || fail "6: step-1 was not persisted"
trainer=$(sed -nE 's/.*started .*\(pid ([0-9]+),.*/\1/p' batch.log)
[ -n "$trainer" ] || fail "6: no trainer pid in the log"
kill -STOP $agent
touch GO
wait_for 10 sh -c "ps -o stat= -p $trainer | grep -q Z" || { kill -CONT $agent; fail "6: the trainer did not exit"; }
kill -TERM $agent
kill -CONT $agent
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" 0 "6: exit status (the trainer finished before the signal)"
ok "a trainer that finished just before SIGTERM (one batch): its 0 stands"

# 7. The checkpoint signal sent to the agent itself (`kill -USR1`, Slurm's
# --signal=B:USR1@...) is a checkpoint request: it goes where the agent's own do (the
# process with a handler), not raw to its child, an sh wrapper that would die of it.
"$RR_BIN" --store "file://$W/s7" --checkpoint-dir "$W/c7" -- \
	sh -c "'$PY' '$TRAINER' --steps 400 --step-time 0.01 --checkpoint-every 0; echo wrapper survived with \$?" > usr1.log 2>&1 &
agent=$!
wait_for 30 grep -q 'training from step 0' usr1.log || { kill -9 $agent; fail "7: training did not start"; }
kill -USR1 $agent
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" 0 "7: exit status"
expect_grep 'SIGUSR1: asking the trainer for a checkpoint' usr1.log "7: taken as a request"
expect_grep 'wrapper survived with 0' usr1.log "7: the sh wrapper was not signalled"
[ "$(grep -c '^checkpoint step-' usr1.log)" -ge 2 ] || fail "7: no checkpoint before the final one: $(cat usr1.log)"
ok "SIGUSR1 to the agent: a checkpoint request to the handler, the sh wrapper survived"

# 8. Started with SIGHUP ignored (nohup): the trainer has it ignored too, as under tini, so
# the SIGHUP the agent passes on when the session hangs up does not kill it.
cat > hup.sh <<'SH'
grep '^SigIgn:' /proc/$$/status > sigign.txt
while [ ! -e HUP_SENT ]; do sleep 0.05; done
sleep 0.3
echo trainer alive
SH
(trap '' HUP; exec "$RR_BIN" --max-restarts 0 --store "file://$W/s8" --checkpoint-dir "$W/c8" -- sh hup.sh) > hup.log 2>&1 &
agent=$!
wait_for 30 test -s sigign.txt || { kill -9 $agent; fail "8: the trainer did not start"; }
kill -HUP $agent
touch HUP_SENT
set +e; wait $agent; rc=$?; set -e
mask=$(awk '{ print $2 }' sigign.txt)
[ $((0x$mask & 1)) = 1 ] || fail "8: SIGHUP not ignored in the trainer (SigIgn $mask)"
expect_eq "$rc" 0 "8: exit status"
expect_grep 'trainer alive' hup.log "8: the trainer survived the SIGHUP"
ok "started with SIGHUP ignored (nohup): the trainer ignores it too and survives a hang-up"
finish
