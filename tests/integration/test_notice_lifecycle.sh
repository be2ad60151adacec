#!/usr/bin/env bash
# A notice's life on an S3 store, as a platform team's soak meets it: a precaution whose
# deadline passes (with its checkpoint durable, and without) must not stop the persists
# that follow; a preemption the trainer outlives ends with the trainer's own status, one it
# obeys with 75; a trainer that commits faster than a persist takes cannot starve the
# notice's checkpoint; and the log says what happened, nothing more.
. "$(dirname "$0")/lib.sh"
# s3rver: the fault proxy (stalled PUTs) is built around it.
S3_SERVER=s3rver
. "$RR_SRC/tests/integration/s3lib.sh"
start_s3
s3_env
. "$RR_SRC/tests/integration/faultlib.sh"
start_faults
T="$RR_SRC/tests/integration/trainers/ticker.py"

# notice_at LOG JSON: writes the notice file NOTICE once LOG says step-2 or a later one was
# persisted (in the background; its pid in NOTICE_PID, which fails if it never came).
notice_at() {
	(wait_for 60 persisted_since 2 "$1" && printf '%s\n' "$2" > NOTICE) &
	NOTICE_PID=$!
}
# notice_sent WHAT: waits for notice_at's writer; a notice never written fails, saying so.
notice_sent() { wait "$NOTICE_PID" || fail "$1: the notice was never written (nothing persisted)"; }
# latest RUN: the checkpoint LATEST names in run RUN's store.
latest() { s3d s3 cp --quiet "s3://$S3_BUCKET/$1/default/LATEST" - | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["checkpoint"])'; }

# --- 1. A precaution made durable in time: the persists after it go on (the store's deadline
# for the notice used to outlive it and fail every later persist at once).
mkdir p1 && cd p1
export RESUME_RUN_STORE="s3://$S3_BUCKET/p1"
notice_at ../p1.log '{"kind":"maintenance","deadline_in":2}'
run_rr ../p1.log --drill-file NOTICE -- "$PY" "$T" --every 0.4 --until 12
notice_sent "precaution in time"
cd ..
expect_eq "$RC" 0 "precaution in time: exit status"
expect_grep 'maintenance notice handled; training goes on' p1.log "the precaution was handled"
expect_no_grep 'persist of step-[0-9]+ failed' p1.log "precaution in time: no persist failed"
expect_eq "$(latest p1)" step-12 "precaution in time: LATEST"
# Only the notice's own checkpoint goes ahead of everything else: the one the trainer
# committed when asked, and one more for each later commit the agent took as the answer
# (the first may have been a save under way when it asked: under load the trainer's next
# periodic commit can come that soon), if the first's persist had started by then.
answers=$((1 + $(grep -c 'the notice takes it as the trainer.s answer' p1.log || true)))
tagged=$(grep -c 'notice: ahead of everything else' p1.log || true)
[ "$tagged" -ge 1 ] && [ "$tagged" -le "$answers" ] ||
	fail "persists tagged as the notice's: $tagged, expected 1 to $answers"
ok "a precaution made durable in time: every later persist succeeds, LATEST is step-12, exit 0"

# --- 2. A precaution whose deadline passes before its checkpoint is durable (every PUT held
# 0.8 s, a 1 s deadline): once the deadline is past, the persists go on.
mkdir p2 && cd p2
export RESUME_RUN_STORE="s3://$S3_BUCKET/p2"
(
	wait_for 60 persisted_since 2 ../p2.log
	fault '{"method":"PUT","action":"stall","seconds":0.8}'
	printf '%s\n' '{"kind":"maintenance","deadline_in":1}' > NOTICE
	wait_for 60 grep -qsE "deadline passed before its checkpoint was durable" ../p2.log
	no_faults
) &
helper=$!
run_rr ../p2.log --drill-file NOTICE -- "$PY" "$T" --every 0.5 --until 12
wait $helper || fail "precaution past its deadline: the deadline was never reported passed"
cd ..
expect_eq "$RC" 0 "precaution past its deadline: exit status"
expect_grep "the maintenance notice's deadline passed before its checkpoint was durable; training goes on" \
	p2.log "the missed precaution is said"
# Every persist that failed is one of the notice's own (its requests end at the deadline),
# or was cut there and persisted again, or was no longer the newest checkpoint's when it
# failed (a routine persist the persister started as the deadline passed, before the agent
# lifted it from the store's requests: a newer commit makes it moot, and only the newest is
# persisted again); which steps these are depends on the load.
sed -nE 's/.*persist of "?step-([0-9]+)"? failed.*/\1/p' p2.log | sort -un > p2-failed.txt
# superseded N: a commit newer than step-N came before step-N's persist failed.
superseded() {
	awk -v n="$1" 'match($0, /checkpoint step-[0-9]+ committed/) {
			m = substr($0, RSTART + 16) + 0; if (m > n) newer = 1 }
		$0 ~ "persist of \"?step-" n "\"? failed" { exit !newer }' p2.log
}
while read -r s; do
	grep -qE "persisting step-$s (\(notice: ahead of everything else\)|again: its persist was cut)" p2.log ||
		superseded "$s" ||
		fail "persists after the deadline: step-$s failed, neither the notice's nor persisted again, and it was the newest"
done < p2-failed.txt
expect_eq "$(latest p2)" step-12 "precaution past its deadline: LATEST"
ok "a precaution past its deadline: training and persists go on, LATEST is step-12, exit 0"

# --- 3. A preemption the trainer outlives (it does not stop, the machine is not taken): the
# persists after the deadline succeed and the finished run exits 0, not 75. Once the
# notice's checkpoint (step-3, at once) is durable, every chunk PUT is held 3 s until the
# deadline has passed (4-5 s after the notice: a notice's deadline is in whole seconds), so
# that the next checkpoint's persist (step-4, 3 s later) is in flight at the deadline and
# nothing newer is committed before it (step-5, at 6 s): the deadline ends its requests,
# and once the machine has outlived it, step-4 is persisted again (were it the trainer's
# last, nothing else would). Only the chunks: a held ledger write would keep step-4's
# persist from starting before the deadline.
mkdir p3 && cd p3
export RESUME_RUN_STORE="s3://$S3_BUCKET/p3"
notice_at ../p3.log '{"kind":"preempt","deadline_in":5}'
(
	wait_for 60 grep -qs 'checkpoint step-[0-9]* is durable in the store' ../p3.log
	fault '{"method":"PUT","path":"/chunks/","action":"stall","seconds":3}'
	wait_for 60 grep -qs "deadline passed and the trainer is still running" ../p3.log
	no_faults
) &
helper=$!
run_rr ../p3.log --drill-file NOTICE -- "$PY" "$T" --every 3 --until 6
notice_sent "preemption outlived"
wait $helper || fail "preemption outlived: the deadline was never reported passed"
cd ..
expect_eq "$RC" 0 "preemption outlived: exit status (the trainer finished its work)"
expect_grep "the preempt notice's deadline passed and the trainer is still running" p3.log \
	"the outlived preemption is said"
# The persist in flight at the deadline failed there; its checkpoint was persisted again,
# and nothing failed after that.
cut=$(sed -nE 's/.*persist of "?(step-[0-9]+)"? failed.*/\1/p' p3.log | sort -u)
[ -n "$cut" ] || fail "preemption outlived: no persist was cut at the deadline (the chunk PUTs were held 3 s)"
for c in $cut; do
	expect_grep "persisting $c again: its persist was cut at the notice's deadline" p3.log \
		"preemption outlived: $c, cut at the deadline, persisted again"
done
sed -n '/again: its persist was cut/,$p' p3.log > p3-after.log
expect_no_grep 'persist of "?step-[0-9]+"? failed' p3-after.log "preemption outlived: a persist after the retry"
expect_eq "$(latest p3)" step-6 "preemption outlived: LATEST"
ok "a preemption the trainer outlived: the persist cut at its deadline (${cut//$'\n'/ }) is persisted again, persists go on, LATEST is step-6, exit 0"

# --- 4. A preemption the trainer obeys: 75, with the notice's checkpoint LATEST.
mkdir p4 && cd p4
export RESUME_RUN_STORE="s3://$S3_BUCKET/p4"
notice_at ../p4.log '{"kind":"preempt","deadline_in":20}'
run_rr ../p4.log --drill-file NOTICE -- "$PY" "$T" --every 0.4 --until 50 --obey
notice_sent "preemption obeyed"
cd ..
expect_eq "$RC" "$RR_PREEMPTED" "preemption obeyed: exit status"
stopped=$(sed -nE 's/^exit for the notice after (step-[0-9]+)$/\1/p' p4.log)
[ -n "$stopped" ] || fail "the trainer did not stop for the notice"
expect_eq "$(latest p4)" "$stopped" "preemption obeyed: LATEST"
ok "a preemption the trainer obeyed: $stopped durable, exit $RR_PREEMPTED"

# --- 5. A trainer that commits every 0.3 s while each persist takes over 1.5 s (every PUT
# held 0.8 s): the notice's checkpoint is persisted, never set aside for the newer ones,
# and is durable before the 20 s deadline.
mkdir p5 && cd p5
export RESUME_RUN_STORE="s3://$S3_BUCKET/p5"
(
	wait_for 60 persisted_since 1 ../p5.log
	fault '{"method":"PUT","action":"stall","seconds":0.8}'
	printf '%s\n' '{"kind":"preempt","deadline_in":20}' > NOTICE
) &
helper=$!
run_rr ../p5.log --drill-file NOTICE -- "$PY" "$T" --every 0.3 --until 60 --bytes 65536
wait $helper || fail "fast commits: the notice was never written (no persist seen)"
no_faults
cd ..
# The first commit after the ask, or the second, which takes its place once (the first may
# have been a save under way when the trainer was asked).
answer=$(sed -nE 's/.*checkpoint (step-[0-9]+) committed after step-[0-9]+: the notice takes it.*/\1/p' p5.log | head -n 1)
[ -n "$answer" ] || answer=$(sed -nE 's/.*checkpoint (step-[0-9]+) committed by the trainer \(.*/\1/p' p5.log | head -n 1)
[ -n "$answer" ] || fail "the trainer's answer to the notice was not seen"
expect_grep "checkpoint $answer is durable in the store: [0-9.]+ s after the notice, [0-9.]+ s before the deadline" \
	p5.log "the notice's checkpoint $answer was durable before the deadline"
expect_grep "committed while the notice's $answer is persisting; it follows once $answer is durable" \
	p5.log "newer commits are said to follow the notice's"
expect_no_grep "persist of $answer set aside" p5.log "the notice's persist was never set aside"
ok "commits every 0.3 s against persists of 1.5 s: the notice's $answer durable before its deadline"

# --- 6. What the log says: an option before a subcommand is that subcommand's (it used to
# run /bin/ls as the trainer); a word that is no command is refused; a restored checkpoint
# is not reported as committed.
run_rr v-ls.log -v ls
expect_eq "$RC" 0 "'resume-run -v ls': exit status"
expect_grep '^  CHECKPOINT +STATE' v-ls.log "'-v ls' lists the run's checkpoints"
expect_no_grep 'started ls' v-ls.log "'-v ls' ran no trainer"
run_rr lss.log lss
expect_eq "$RC" 125 "'resume-run lss': exit status"
expect_grep "unknown command 'lss'" lss.log "a mistyped subcommand is named"
mkdir p6 && cd p6
export RESUME_RUN_STORE="s3://$S3_BUCKET/p4"
run_rr ../p6.log -- "$PY" "$T" --every 0.2 --until 0
cd ..
expect_eq "$RC" 0 "the second machine: exit status"
expect_grep "restored $stopped: " p6.log "the second machine restored $stopped"
expect_no_grep "checkpoint $stopped committed" p6.log "the restored checkpoint is not reported as committed"
ok "'-v ls' lists, 'lss' is refused with the reason; the restored $stopped is not logged as committed"
finish
