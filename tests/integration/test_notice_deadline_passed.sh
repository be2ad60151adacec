#!/usr/bin/env bash
# A preemption notice whose deadline passes with this machine still here (the cloud did not
# take it after all, or not yet), in the three ways that lost the newest checkpoint or
# misreported the run before:
#  1. the notice's checkpoint became durable only after the deadline: the notice is then
#     over, as when it is durable in time, and the trainer's own exit status stands (it was
#     75, --every stayed paused and every later notice was ignored) once it committed again
#     (1b: a 0 with nothing committed since is a trainer that left for the notice: 75);
#  2. the notice's checkpoint upload was cut at the deadline: it is persisted again once the
#     deadline no longer bounds the store (it was never persisted: the log said it went on);
#  3. the notice came while a finished trainer's final checkpoint uploaded, and the deadline
#     cut it: the agent leaves 75, so the job runs again and makes it again (it left 0, the
#     job done and its final checkpoint in no store);
# and, 4, a SIGTERM's --grace is not stretched by a later notice's longer deadline. Then
# (found by a review of the event loop):
#  5. a precaution's deadline (a rebalance) does not cut a finished trainer's final upload
#     (it did, and the agent left 0 with the final checkpoint in no store), or one it cuts
#     (a request begun after the notice) is persisted again after it;
#  6. SIGTERM's --grace bounds the final upload after an earlier notice was handled (it did
#     not: the handled notice counted as a durable one, and the agent outlived the grace);
#  7. the notice's own checkpoint failed, a later commit made durable answers the notice
#     (nothing did: the notice stood for the rest of the run, and a finished trainer's 0
#     became 75).
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/faultlib.sh"

T="$RR_SRC/tests/integration/trainers/slow_saver.py"
# notice_after PATTERN LOG JSON: writes the drill notice JSON once LOG has PATTERN.
notice_after() {
	wait_for 60 grep -q "$1" "$2" || fail "no '$1' in $2"
	printf '%s\n' "$3" > NOTICE
}

# --- 1. durable after the deadline (a file store; the trainer saves for 3 s) ---
mkdir one && cd one
(notice_after 'started' ../one.log '{"kind":"preempt","deadline_in":1}') &
n=$!
run_rr ../one.log -v --store "file://$W/one-store" --drill-file NOTICE \
	-- "$PY" "$T" --save-s 3 --run-s 8 --final
wait $n
cd ..
expect_eq "$RC" 0 "1: exit status (the trainer's own)"
expect_grep "deadline passed before its checkpoint was durable, and this machine is still here" one.log "1: the deadline passed first"
expect_grep "notice's checkpoint is durable, after its deadline, and this machine is still here: the notice is over" one.log "1: the notice ended"
expect_grep "the trainer finished after outliving the notice" one.log "1: said"
ok "1: a notice's checkpoint durable after its deadline ends the notice; the trainer trained on, committed its final step, and its 0 stands"
# 1b. The same trainer without its final commit: it left for the notice (a save past the
# deadline, then an evaluation after train() returned), and its later 0 is no finished run.
# The agent used to pass it on, and the relauncher took the unfinished job as done (found by
# a review: the reference trainer, a step longer than the deadline, exited 0 in 5 of 6 runs).
mkdir oneb && cd oneb
(notice_after 'started' ../oneb.log '{"kind":"preempt","deadline_in":1}') &
n=$!
run_rr ../oneb.log -v --store "file://$W/oneb-store" --drill-file NOTICE \
	-- "$PY" "$T" --save-s 3 --run-s 5
wait $n
cd ..
expect_eq "$RC" "$RR_PREEMPTED" "1b: exit status"
expect_grep "exited 0 after outliving the notice with nothing committed since: taken as leaving for the notice" oneb.log "1b: said why"
ok "1b: a trainer that exits 0 after outliving the notice with nothing committed since leaves $RR_PREEMPTED"

# --- 4. SIGTERM's --grace stays the limit when a later notice has a longer deadline: a
# rebalance stands, SIGTERM comes (--grace 4), then a preemption with 60 s. Before, the
# preemption's deadline replaced the grace: the agent left 30 s after SIGTERM (when the
# trainer's save ended), past a pod's termination grace, which ends in SIGKILL. ---
mkdir four && cd four
"$RR_BIN" -v --grace 4 --store "file://$W/four-store" --drill-file NOTICE \
	-- "$PY" "$T" --save-s 30 --run-s 60 > ../four.log 2>&1 &
agent=$!
wait_for 60 grep -q 'started' ../four.log || fail "4: the trainer did not start"
printf '{"kind":"rebalance"}\n' > NOTICE
wait_for 30 grep -q 'notice: rebalance from file' ../four.log || fail "4: no rebalance notice"
t0=$SECONDS
kill -TERM "$agent"
rm -f NOTICE
sleep 1.2 # the drill file's settle time: a new file, a new notice
printf '{"kind":"preempt","deadline_in":60}\n' > NOTICE.tmp && mv NOTICE.tmp NOTICE
set +e; wait "$agent"; RC=$?; set -e
took=$((SECONDS - t0))
cd ..
expect_eq "$RC" 75 "4: exit status"
expect_grep 'notice: preempt from file, deadline in [0-4] s' four.log "4: the preemption kept SIGTERM's deadline"
[ "$took" -le 15 ] || fail "4: the agent left $took s after SIGTERM with --grace 4 (the save takes 30 s)"
ok "4: SIGTERM's --grace stays the limit through a later, longer notice (left after $took s)"

# --- the S3 test server behind the fault proxy for 2 and 3 ---
start_s3
s3_env
start_faults
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'n_rc=$?; stop_faults; stop_s3; cleanup $n_rc' EXIT

# --- 2. the notice's upload cut at the deadline, persisted again after it ---
mkdir two && cd two
fault '{"method": "PUT", "path": "/chunks/", "nth": 1, "action": "stall", "seconds": 5}'
(notice_after 'started' ../two.log '{"kind":"preempt","deadline_in":2}') &
n=$!
run_rr ../two.log -v --store "s3://$S3_BUCKET/two" --drill-file NOTICE \
	-- "$PY" "$T" --run-s 12 --bytes 300000
wait $n
cd ..
no_faults
name=$(sed -nE 's/^commit (step-[0-9]+)$/\1/p' two.log | head -n 1)
[ -n "$name" ] || fail "2: the trainer committed nothing"
expect_grep "persisting $name again: its persist was cut at the notice's deadline" two.log "2: persisted again"
expect_grep "persisted $name:" two.log "2: then durable"
"$RR_BIN" ls --store "s3://$S3_BUCKET/two" > two-ls.out 2>&1 || fail "2: ls: $(cat two-ls.out)"
expect_grep "$name +committed" two-ls.out "2: the notice's checkpoint is in the store"
ok "2: the notice's checkpoint cut at the deadline was persisted again once it passed"

# notice_in_final_upload NAME FAULT NOTICE [FAULT2]: the trainer commits its final
# step-100000 and exits 0; while that upload is held by FAULT (a proxy rule; FAULT2 a second
# one), the drill NOTICE comes. Sets RC.
notice_in_final_upload() {
	mkdir "$1" && cd "$1"
	fault "$2"
	[ -z "${4:-}" ] || fault "$4"
	(notice_after 'trainer exited with status 0' "../$1.log" "$3") &
	local n=$!
	run_rr "../$1.log" -v --store "s3://$S3_BUCKET/$1" --drill-file NOTICE \
		-- "$PY" "$T" --run-s 0.5 --final --bytes 300000
	wait $n
	cd ..
	no_faults
}

# --- 3. a notice cuts a finished trainer's final upload ---
notice_in_final_upload three '{"method": "PUT", "path": "/chunks/", "nth": 1, "action": "stall", "seconds": 8}' \
	'{"kind":"preempt","deadline_in":2}'
expect_eq "$RC" 75 "3: exit status"
expect_grep 'deadline passed with the persist unfinished' three.log "3: the deadline cut the upload"
expect_grep 'checkpoint step-100000 was not made durable before leaving.*leaving as preempted' three.log "3: the line saying why 75"
ok "3: a notice that cut a finished trainer's final upload leaves 75"

# --- 5. a rebalance's deadline passes during a finished trainer's final upload ---
notice_in_final_upload five '{"method": "PUT", "path": "step-100000/manifest", "action": "stall", "seconds": 5}' \
	'{"kind":"rebalance","deadline_in":2}'
expect_eq "$RC" 0 "5: exit status (a precaution does not stop a finished run)"
expect_grep 'notice: rebalance from file, deadline in' five.log "5: the notice came"
expect_grep 'persisted step-100000:' five.log "5: the final checkpoint persisted"
"$RR_BIN" ls --store "s3://$S3_BUCKET/five" > five-ls.out 2>&1 || fail "5: ls: $(cat five-ls.out)"
expect_grep 'step-100000 +committed' five-ls.out "5: the final checkpoint is in the store"
ok "5: a rebalance's deadline does not cut a finished trainer's final upload (exit 0, in the store)"
# 5b. The same with the request held begun after the notice (the manifest's, the first chunk
# held 2 s before it): the store's requests end at the deadline, so it fails there; the
# final checkpoint is persisted again once the deadline is past (it was not: the agent left
# 0 with it in no store; found by a review).
notice_in_final_upload fiveb '{"method": "PUT", "path": "/chunks/", "nth": 1, "action": "stall", "seconds": 2}' \
	'{"kind":"rebalance","deadline_in":4}' \
	'{"method": "PUT", "path": "step-100000/manifest", "nth": 1, "action": "stall", "seconds": 5}'
expect_eq "$RC" 0 "5b: exit status"
expect_grep 'persisting step-100000 again: its persist was cut' fiveb.log "5b: persisted again after the deadline"
"$RR_BIN" ls --store "s3://$S3_BUCKET/fiveb" > fiveb-ls.out 2>&1 || fail "5b: ls: $(cat fiveb-ls.out)"
expect_grep 'step-100000 +committed' fiveb-ls.out "5b: the final checkpoint is in the store"
ok "5b: a final upload cut by a rebalance's deadline is persisted again after it (exit 0, in the store)"
# 5c. A final persist that fails for another reason (a file name the store refuses) under a
# maintenance deadline far away: the agent leaves at once, not at the deadline (found by a
# review of 5b's fix, which waited for any failure; a real maintenance deadline is days out).
mkdir fivec && cd fivec
cat > far.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
printf '{"kind":"maintenance","deadline_in":60}' > NOTICE.tmp && mv NOTICE.tmp NOTICE
while [ ! -e "$RESUME_RUN_NOTICE_FILE" ]; do sleep 0.05; done
mkdir -p "$d/.step-100.tmp" && echo x > "$d/.step-100.tmp/a\\b" && mv "$d/.step-100.tmp" "$d/step-100"
exit 0
SH
t0=$SECONDS
run_rr ../fivec.log --store "file://$W/fivec-store" --drill-file NOTICE -- sh far.sh
cd ..
expect_eq "$RC" 0 "5c: exit status"
[ $((SECONDS - t0)) -lt 45 ] || fail "5c: the agent waited $((SECONDS - t0)) s for a deadline 60 s away"
ok "5c: a final persist failing under a far maintenance deadline: the agent leaves at once (exit 0)"

# --- 6. SIGTERM after a handled notice: --grace bounds the final upload ---
mkdir six && cd six
fault '{"method": "PUT", "path": "step-100000/manifest", "action": "stall", "seconds": 20}'
"$RR_BIN" -v --grace 2 --store "s3://$S3_BUCKET/six" --drill-file NOTICE \
	-- "$PY" "$T" --run-s 3 --final --bytes 300000 > ../six.log 2>&1 &
agent=$!
wait_for 60 grep -q 'started' ../six.log || fail "6: the trainer did not start"
printf '{"kind":"rebalance"}\n' > NOTICE
wait_for 30 grep -q 'the notice is over\|is durable in the store' ../six.log || fail "6: the rebalance was not answered"
wait_for 30 grep -q 'persisting step-100000' ../six.log || fail "6: no final upload"
t0=$SECONDS
kill -TERM "$agent"
set +e; wait "$agent"; RC=$?; set -e
took=$((SECONDS - t0))
cd ..
no_faults
expect_eq "$RC" 75 "6: exit status"
[ "$took" -le 8 ] || fail "6: the agent left $took s after SIGTERM with --grace 2 (the upload stalls 20 s)"
ok "6: after a handled notice, SIGTERM's --grace still bounds the final upload (left after $took s, 75)"

# --- 7. the notice's checkpoint fails; a later commit made durable answers the notice ---
mkdir seven && cd seven
cat > twice.sh <<'SH'
#!/usr/bin/env bash
# On SIGUSR1: commits step-10 then step-11; step-12 once GO12 exists; once STOP does,
# commits its final step-13 (it trained on past the notice) and exits 0.
d=$RESUME_RUN_CHECKPOINT_DIR
commit() { mkdir -p "$d/.step-$1.tmp"; head -c 300000 /dev/urandom > "$d/.step-$1.tmp/f.bin"; mv "$d/.step-$1.tmp" "$d/step-$1"; echo "commit step-$1"; }
asked=0
trap 'asked=1' USR1
commit 1
done12=0
while [ ! -e STOP ]; do
	if [ $asked = 1 ]; then asked=0; commit 10; sleep 0.3; commit 11; fi
	if [ -e GO12 ] && [ $done12 = 0 ]; then commit 12; done12=1; fi
	sleep 0.1
done
commit 13
exit 0
SH
chmod +x twice.sh
"$RR_BIN" -v --store "s3://$S3_BUCKET/seven" --drill-file NOTICE -- ./twice.sh > ../seven.log 2>&1 &
agent=$!
wait_for 60 grep -q 'persisted step-1:' ../seven.log || fail "7: no step-1"
# chunk PUTs answered 503 with Retry-After 30: the persists bounded by the notice fail at once
fault '{"method": "PUT", "path": "/chunks/", "action": "error", "status": 503, "retry_after": 30}'
printf '{"kind":"preempt","deadline_in":8}\n' > NOTICE
wait_for 30 grep -q 'persist of step-11 failed' ../seven.log || fail "7: step-11's persist did not fail"
no_faults
touch GO12
wait_for 30 grep -q 'persisted step-12:' ../seven.log || fail "7: step-12 was not persisted"
wait_for 15 grep -q 'checkpoint step-12 is durable in the store' ../seven.log || fail "7: step-12 did not answer the notice"
sleep 9 # past the deadline: the machine is still here, the notice is over
touch STOP
set +e; wait "$agent"; RC=$?; set -e
cd ..
expect_eq "$RC" 0 "7: exit status (the notice outlived, the trainer's own)"
ok "7: the notice's checkpoint failed; step-12, committed after it, answered the notice; the trainer's 0 stands"
finish
