#!/usr/bin/env bash
# As PID 1 of a PID namespace (a container entrypoint), the agent reaps every zombie:
# orphans of the trainer are re-parented to it and must not pile up.
. "$(dirname "$0")/lib.sh"

# The trainer orphans five short-lived processes, waits for them to die, then exits with
# the number of zombies left to its own parent (the agent, or the control's PID 1): orphans
# are re-parented there, and 0 remain when it reaps them. Zombies of other processes on the
# machine (tests running in parallel) do not count.
cat > orphans.sh <<'SH'
for i in 1 2 3 4 5; do ( sleep 0.2 & ) ; done
sleep 1.5
n=0
for s in /proc/[0-9]*/status; do
	awk -v p="$PPID" '/^State:/ { z = ($2 == "Z") } /^PPid:/ { pp = $2 } END { exit !(z && pp == p) }' "$s" 2>/dev/null && n=$((n + 1))
done
exit $n
SH

# Control: a PID 1 that only waits for its own child leaves the orphans as zombies, so
# the check above can see them.
set +e
unshare --pid --fork --mount-proc "$PY" -c 'import subprocess,sys; sys.exit(subprocess.call(["sh", "orphans.sh"]))'
control=$?
set -e
[ "$control" -ge 5 ] || fail "control run should see 5 zombies, saw $control"
ok "control: a non-reaping PID 1 leaves $control zombies"

set +e
unshare --pid --fork --mount-proc "$RR_BIN" --max-restarts 0 --store "file://$W/store" \
	--checkpoint-dir "$W/ck" -- sh orphans.sh > pid1.log 2>&1
rc=$?
set -e
expect_eq "$rc" 0 "zombies seen by the trainer under resume-run as PID 1"
ok "resume-run as PID 1 reaps orphaned zombies"

# Not PID 1: it is a child subreaper, so orphans are still reaped.
run_rr sub.log --max-restarts 0 --store "file://$W/store" --checkpoint-dir "$W/ck" -- sh orphans.sh
expect_eq "$RC" 0 "zombies under resume-run as a subreaper"
ok "resume-run as a subreaper reaps orphaned zombies"

# As PID 1, an orphan that is not the trainer's (`kubectl exec pod -- sh -c 'cmd &'`: its
# shell exits, the kernel gives cmd to PID 1) is reaped when it ends but never taken for the
# trainer's leftover and killed when the trainer exits.
cat > waits.sh <<'SH'
while [ ! -e ORPHAN_STARTED ]; do sleep 0.05; done
exit 1
SH
rm -f ORPHAN_STARTED orphan.pid
unshare --pid --fork --mount-proc "$RR_BIN" --max-restarts 0 --store "file://$W/store2" \
	--checkpoint-dir "$W/ck2" -- sh waits.sh > foreign.log 2>&1 &
ns=$!
# On a failure the trainer is let go, so that the agent (PID 1 of the namespace) ends too.
give_up() { touch "$W/ORPHAN_STARTED"; wait $ns || true; fail "$1"; }
wait_for 30 grep -q 'started sh' foreign.log || give_up "the agent did not start its trainer"
agent=$(pgrep -P $ns) || give_up "no agent under unshare"
nsenter -t "$agent" -p -m sh -c "sh -c 'sleep 30 & echo \$! > \"$W/orphan.pid\"'" ||
	give_up "nsenter"
wait_for 10 test -s orphan.pid || give_up "the orphan did not start"
touch ORPHAN_STARTED
set +e; wait $ns; rc=$?; set -e
expect_eq "$rc" 1 "the trainer's status"
expect_no_grep 'of the trainer still running' foreign.log "another process's orphan taken for the trainer's"
ok "resume-run as PID 1 leaves an orphan that is not the trainer's alone"
finish
