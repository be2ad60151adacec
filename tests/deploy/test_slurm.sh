#!/usr/bin/env bash
# scripts/deploy/slurm/train.sbatch on a real single-node Slurm (slurmctld + slurmd + munge,
# started here with a generated slurm.conf on free ports; ProctrackType=proctrack/linuxproc,
# TaskPlugin=task/none). The job trains under resume-run; Slurm signals the batch shell the
# way --signal=B:TERM@120 does (scancel --batch --signal=TERM); the agent checkpoints and
# exits 75; the script requeues the job; on its next start (a fresh local directory, as on
# another node) the agent restores the checkpoint and the training ends exactly where an
# uninterrupted one does.
. "$(dirname "$0")/../integration/lib.sh"
[ "$(id -u)" = 0 ] || fail "needs root: slurmd runs jobs as their users"
for tool in munged slurmctld slurmd sbatch scontrol scancel sinfo; do
	command -v "$tool" > /dev/null || fail "$tool not installed (scripts/install-deps.sh test)"
done

S="$W/slurm"
mkdir -p "$S/munge" "$S/state" "$S/spool" "$W/tmp"
chmod 0711 "$S/munge"
head -c 1024 /dev/urandom > "$S/munge/munge.key"
chmod 0400 "$S/munge/munge.key"
SOCK="$S/munge/munge.socket"
# The daemons run in the foreground as children of this script, so the trap can stop them
# and wait until they are gone (slurmctld saves its state on the way out) before the work
# directory is removed.
PIDS=()
stop_slurm() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	return 0
}
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'sl_rc=$?; stop_slurm; cleanup $sl_rc' EXIT
munged -F -f -S "$SOCK" --key-file="$S/munge/munge.key" --log-file="$S/munged.log" \
	--pid-file="$S/munged.pid" --seed-file="$S/munged.seed" &
PIDS+=($!)
wait_for 20 test -S "$SOCK" || fail "munged did not start: $(cat "$S/munged.log")"

read -r CTLD_PORT SLURMD_PORT < <("$PY" -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
node=$(hostname -s)
cat > "$S/slurm.conf" <<CONF
ClusterName=rrtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobRequeue=1
PlugStackConfig=/dev/null
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$S/slurm.conf"
slurmctld -D -i -f "$SLURM_CONF" > "$S/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -f "$SLURM_CONF" > "$S/slurmd.out" 2>&1 &
PIDS+=($!)
node_idle() { [ "$(sinfo -h -n "$node" -o %t 2>/dev/null)" = idle ]; }
wait_for 60 node_idle || fail "the node did not come up: $(sinfo 2>&1; tail -n 5 "$S/slurmctld.log" "$S/slurmd.log")"
ok "single-node Slurm $(slurmctld -V | cut -d' ' -f2) up (slurmctld :$CTLD_PORT, slurmd :$SLURMD_PORT, munge)"

STEPS=400
reference_run $STEPS ref.json
job_field() { scontrol show job "$job" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }
job=$(RESUME_RUN_BIN="$RR_BIN" RESUME_RUN_STORE="file://$W/store" RESUME_RUN_ARGS="--precision exact" \
	TMPDIR="$W/tmp" sbatch --parsable --chdir="$W" --output="$W/job-%j.out" \
	"$RR_SRC/scripts/deploy/slurm/train.sbatch" \
	"$PY" "$TRAINER" --steps $STEPS --step-time 0.02 --checkpoint-every 50 --out "$W/final.json") ||
	fail "sbatch refused the job"
out="$W/job-$job.out"
wait_for 60 grep -qs 'checkpoint step-50 committed' "$out" || fail "the job did not start training: $(job_field JobState)"
# What --signal=B:TERM@120 does 120 s before the time limit: SIGTERM to the batch shell alone.
scancel --batch --signal=TERM "$job"
wait_for 60 grep -qs 'train.sbatch: preempted; requeueing job' "$out" || fail "no requeue"
expect_grep 'notice: terminate from signal, deadline in 100 s' "$out" "the agent took SIGTERM as a notice"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' "$out" "checkpoint durable"
expect_grep 'leaving with status 75: stopped by a notice' "$out" "agent exit 75"
expect_grep 'train.sbatch: resume-run exited with status 75' "$out" "the script saw 75"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' "$out")
[ -n "$saved" ] || fail "the trainer did not checkpoint on the signal"
requeued() { [ "$(job_field Restarts)" = 1 ] && [ "$(job_field JobState)" = PENDING ]; }
wait_for 30 requeued || fail "job not pending after the requeue: $(job_field JobState) restarts $(job_field Restarts)"
ok "job $job: SIGTERM to the batch shell -> checkpoint step-$saved durable -> exit 75 -> requeued"

# A new start on "another node": nothing local survives. Slurm holds a requeued job back for
# about two minutes (Reason=BeginTime); the test lets it start now.
rm -rf "$W/tmp/resume-run-$job"
scontrol update jobid="$job" StartTime=now
finished() { case "$(job_field JobState)" in COMPLETED | FAILED | CANCELLED | TIMEOUT) return 0 ;; esac; return 1; }
wait_for 120 finished || fail "the requeued job did not finish: $(job_field JobState)"
expect_eq "$(job_field JobState)" COMPLETED "job state"
expect_eq "$(job_field ExitCode)" 0:0 "job exit code"
expect_grep 'train.sbatch: job [0-9]+ restart 1 on' "$out" "second start"
expect_grep "restored step-$saved" "$out" "restore on the second start"
expect_grep "resumed from step $saved" "$out" "the trainer resumed"
expect_eq "$(json_field final.json sha256)" "$(json_field ref.json sha256)" "final weights"
ok "requeued job restored step-$saved, finished (COMPLETED 0:0), final weights identical to an uninterrupted run"
finish
