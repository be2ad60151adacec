#!/usr/bin/env bash
# torchrun + DCP (issue 14, README, "The trainer contract" "Who gets the signal"): a
# launcher that starts two
# workers with start_new_session=True the way torchrun >= 2.2 does
# (torch/distributed/elastic/multiprocessing/subprocess_handler), so they are in sessions
# and process groups of their own. The checkpoint signal reaches both workers (they have a
# handler) and not the launcher (it has none, and would die of SIGUSR1); the final SIGTERM
# of a notice reaches the workers too, even when the launcher does not pass it on.
. "$(dirname "$0")/lib.sh"
T="$RR_SRC/tests/integration/trainers"
FW="$T/frameworks.py"

# 1. A preemption notice: both workers checkpoint (DCP shards, then .metadata), the
#    checkpoint is durable, the workers leave, the launcher exits on its own.
run_rr notice.log --notice-file "$W/NOTICE" --store "file://$W/s1" --checkpoint-dir "$W/c1" -- \
	"$PY" "$T/torchrun_like.py" 2 -- "$PY" "$FW" --shape dcp --steps 100000 --step-time 0.01 &
agent=$!
wait_for 60 grep -qs 'rank 1: fresh start' notice.log || fail "workers did not start"
wait_for 60 grep -qs 'rank 0: fresh start' notice.log || fail "workers did not start"
touch "$W/NOTICE"
# Bounded: with a process-group-only delivery no worker ever gets the signal and the agent
# waits for a handler forever.
wait_for 60 sh -c "! kill -0 $agent 2>/dev/null" || fail "the workers never got the checkpoint signal"
set +e; wait $agent; set -e
expect_grep 'launcher: started 2 workers in new sessions' notice.log "launcher started"
expect_grep 'rank 0: checkpoint signal: saved at step' notice.log "rank 0 signalled"
expect_grep 'rank 1: checkpoint signal: saved at step' notice.log "rank 1 signalled"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' notice.log "durable"
expect_grep 'launcher: workers exited 0 0' notice.log "launcher untouched by SIGUSR1, workers left cleanly"
"$RR_BIN" ls --store "file://$W/s1" > ls1.txt 2>&1
expect_grep '^\* step-[0-9]+ +committed' ls1.txt "DCP checkpoint committed in the store"
ok "notice: both new-session workers got SIGUSR1, the launcher did not; DCP checkpoint durable"

# The status: the agent's exit for a notice-driven stop (--preempted-exit-code), never the
# launcher dying of a signal.
"$RR_BIN" --notice-file "$W/NOTICE2" --store "file://$W/s2" --checkpoint-dir "$W/c2" -- \
	"$PY" "$T/torchrun_like.py" 2 -- "$PY" "$FW" --shape dcp --steps 100000 --step-time 0.01 \
	> notice2.log 2>&1 &
agent=$!
wait_for 60 grep -qs 'rank 1: fresh start' notice2.log || fail "workers did not start"
wait_for 60 grep -qs 'rank 0: fresh start' notice2.log || fail "workers did not start"
touch "$W/NOTICE2"
wait_for 60 sh -c "! kill -0 $agent 2>/dev/null" || fail "the workers never got the checkpoint signal"
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" "${RR_PREEMPTED:-0}" "exit status after the notice"
ok "notice: exit status ${RR_PREEMPTED:-0}"

# 2. SIGTERM to the agent: workers that stay after checkpointing (FW_STAY) and a launcher
#    that keeps SIGTERM to itself; the agent's final SIGTERM still ends the workers.
FW_STAY=1 "$RR_BIN" --grace 20 --store "file://$W/s3" --checkpoint-dir "$W/c3" -- \
	"$PY" "$T/torchrun_like.py" 2 --keep-term -- "$PY" "$FW" --shape dcp --steps 100000 \
	--step-time 0.01 > term.log 2>&1 &
agent=$!
wait_for 60 grep -qs 'rank 1: fresh start' term.log || fail "workers did not start"
wait_for 60 grep -qs 'rank 0: fresh start' term.log || fail "workers did not start"
kill -TERM $agent
wait_for 60 sh -c "! kill -0 $agent 2>/dev/null" || fail "agent did not finish: workers never got SIGTERM"
set +e; wait $agent; set -e
expect_grep 'rank 0: checkpoint signal: saved at step' term.log "rank 0 signalled"
expect_grep 'rank 1: checkpoint signal: saved at step' term.log "rank 1 signalled"
expect_grep 'launcher: SIGTERM, not passed on' term.log "launcher got SIGTERM"
expect_grep 'launcher: workers exited -15 -15' term.log "both workers ended by the agent's SIGTERM"
ok "SIGTERM notice: the final SIGTERM reached both new-session workers"

finish
