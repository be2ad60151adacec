#!/usr/bin/env bash
# A torchrun-like launcher (docs/trainer-contract.md, "The trainer contract", "The checkpoint
# signal") that starts two workers with start_new_session=True the way torchrun >= 2.2 does
# (torch/distributed/elastic/multiprocessing/subprocess_handler), so they are in sessions and
# process groups of their own, and that keeps SIGTERM to itself, which real torchrun never does:
# the final SIGTERM of a notice still reaches the workers. Real torchrun with real DCP (the
# checkpoint signal reaching both workers and not the launcher, exit 75) is
# tests/frameworks/test_dcp.sh; this one runs here under the sanitizers too.
. "$(dirname "$0")/lib.sh"
T="$RR_SRC/tests/integration/trainers"
FW="$T/frameworks.py"

# SIGTERM to the agent: workers that stay after checkpointing (FW_STAY) and a launcher
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
