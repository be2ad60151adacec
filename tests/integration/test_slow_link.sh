#!/usr/bin/env bash
# A notice on a degraded link: S3 behind a proxy that moves 50 kB/s each way (slow, never
# stalled, so the stall rule does not fire). The trainer's routine checkpoint is 8 MiB of
# random bytes (about three minutes of upload); a notice arrives while it crawls up. The
# routine upload is set aside at once (its requests in flight end), and the small notice
# checkpoint is durable well before the 40 s deadline; a new machine restores it. Then
# SIGTERM while a finished trainer's last checkpoint crawls up: the agent leaves within
# --grace (or at a second SIGTERM), with 75, as that checkpoint was not made durable; the
# same after a notice's checkpoint is durable; and another node's deadline does not cut a
# multi-node part, while a node's own notice does.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"

RATE=50000
DEADLINE=40
start_s3
"$PY" "$RR_SRC/tests/lib/throttle_proxy.py" --to "127.0.0.1:$S3_PORT" --rate $RATE \
	--stats "$W/link.stats" > proxy.out 2> proxy.log &
PROXY_PID=$!
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'p_rc=$?; kill $PROXY_PID ${PROXY2_PID:-} 2>/dev/null; stop_s3; cleanup $p_rc' EXIT
wait_for 60 grep -q '^ready' proxy.out || fail "the throttling proxy did not start"
PPORT=$(sed -nE 's/^ready ([0-9]+)/\1/p' proxy.out)
s3_env
export AWS_ENDPOINT_URL="http://127.0.0.1:$PPORT"
export RESUME_RUN_STORE="s3://$S3_BUCKET/slow"
up() { awk '{print $2}' "$W/link.stats"; }

# The link really is that slow: 200 kB through it take about 4 s.
head -c 200000 /dev/urandom > probe.bin
t0=$(date +%s.%N)
# (signed: a server may refuse an anonymous PUT before reading its body)
curl -sS -o /dev/null -T probe.bin --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3_AKID:$S3_SECRET" \
	"http://127.0.0.1:$PPORT/$S3_BUCKET/probe" || true
secs=$("$PY" -c "import sys,time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$t0")
"$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 3 else 1)" "$secs" ||
	fail "200 kB crossed the throttled link in $secs s (expected about 4 s)"
ok "the link moves about $RATE B/s (200 kB in $secs s)"

# The notice (with its deadline) once the routine upload has moved 300 kB of its 8 MiB.
(
	wait_for 120 test -d .resume-run/checkpoints/step-1
	base=$(up)
	wait_for 120 sh -c "[ \$(awk '{print \$2}' '$W/link.stats') -gt $((base + 300000)) ]"
	printf '{"kind":"preempt","deadline_in":%d}\n' $DEADLINE > NOTICE
) &
notice_pid=$!
start=$SECONDS
run_rr m1.log -v --drill-file NOTICE -- "$PY" "$RR_SRC/tests/integration/trainers/big_then_small.py"
wait $notice_pid
took=$((SECONDS - start))
expect_eq "$RC" "${RR_PREEMPTED:-0}" "machine 1 exit status"
expect_grep 'persisting step-1' m1.log "the routine persist started"
expect_grep 'notice: preempt from file, deadline in' m1.log "the notice was seen"
expect_grep 'persist of step-1 set aside' m1.log "the routine persist stepped aside"
expect_grep 'checkpoint step-2 is durable in the store: [0-9.]+ s after the notice, [0-9.]+ s before the deadline' \
	m1.log "the notice checkpoint is durable before the deadline"
expect_no_grep 'persisted step-1:' m1.log "the 8 MiB routine checkpoint did not finish first"
durable=$(grep -E 'checkpoint step-2 is durable in the store' m1.log | head -n 1)
after=$(sed -nE 's/.*durable in the store: ([0-9.]+) s after the notice.*/\1/p' <<< "$durable")
before=$(sed -nE 's/.*s after the notice, ([0-9.]+) s before the deadline.*/\1/p' <<< "$durable")
ok "notice during an 8 MiB routine upload at $RATE B/s: step-2 durable $after s after the notice, $before s before the $DEADLINE s deadline (run took $took s; the routine upload alone needs ~170 s)"

# What the store holds: step-2 committed, and a new machine restores it.
"$RR_BIN" ls > ls.out 2>&1 || fail "ls: $(cat ls.out)"
expect_grep '^\* step-2 +committed' ls.out "step-2 is LATEST"
cp .resume-run/checkpoints/step-2/state.bin written-state.bin
rm -rf .resume-run/checkpoints NOTICE
run_rr m2.log restore --to restored
expect_eq "$RC" 0 "restore"
cmp restored/step-2/state.bin written-state.bin || fail "restored step-2 differs from what the trainer wrote"
ok "a new machine restores step-2 through the slow link"

# SIGTERM (`docker stop`, a node drain) while the last checkpoint of a trainer that finished
# (status 0) crawls up: the upload is bounded by --grace like a notice's, and a second
# SIGTERM does not wait even for that. Cut there, that checkpoint is only on a disk about to
# go: the agent leaves 75 (preempted), not 0, so that whatever relaunches the job runs it
# again from the store's newest and makes the last checkpoint again (a 0 here lost it: the
# job was done and its final checkpoint nowhere). The trainer commits 1 MB of random bytes
# (about 20 s over the link) and exits at once.
cat > last_then_exit.sh <<'SH'
mkdir "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp"
head -c 1000000 /dev/urandom > "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp/weights.bin"
mv "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp" "$RESUME_RUN_CHECKPOINT_DIR/step-1"
SH
term_while_flushing() { # NAME GRACE SIGNALS: SIGTERMs once the trainer exited 0; sets RC, TOOK
	local name=$1 grace=$2 signals=$3 agent t0
	"$RR_BIN" --grace "$grace" --store "s3://$S3_BUCKET/$name" --checkpoint-dir "$W/ck-$name" \
		-- sh last_then_exit.sh > "$name.log" 2>&1 &
	agent=$!
	wait_for 60 grep -q 'trainer exited with status 0' "$name.log" || fail "$name: the trainer did not finish"
	wait_for 30 grep -q 'persisting step-1' "$name.log" || fail "$name: the last persist did not start"
	t0=$SECONDS
	kill -TERM $agent
	if [ "$signals" = 2 ]; then
		wait_for 10 grep -q 'SIGTERM with no trainer running' "$name.log" || fail "$name: first SIGTERM not seen"
		kill -TERM $agent
	fi
	set +e; wait $agent; RC=$?; set -e
	TOOK=$((SECONDS - t0))
}
term_while_flushing last-grace 3 1
expect_eq "$RC" 75 "SIGTERM while a finished trainer's checkpoint uploads: exit status"
expect_no_grep 'persisted step-1:' last-grace.log "the 20 s upload did not finish first"
expect_grep 'deadline passed with the persist unfinished' last-grace.log "the upload was cut at the grace"
expect_grep 'checkpoint step-1 was not made durable before leaving.*leaving as preempted' last-grace.log "the line saying why 75"
[ "$TOOK" -le 15 ] || fail "the agent left $TOOK s after SIGTERM with --grace 3 (the upload needs ~20 s)"
ok "SIGTERM during a finished trainer's last upload: cut at the grace, exit 75 (to run again), left after $TOOK s (--grace 3)"
term_while_flushing last-twice 600 2
expect_eq "$RC" 75 "two SIGTERMs while a finished trainer's checkpoint uploads: exit status"
expect_no_grep 'persisted step-1:' last-twice.log "the 20 s upload did not finish first"
[ "$TOOK" -le 15 ] || fail "the agent left $TOOK s after a second SIGTERM (--grace 600)"
ok "a second SIGTERM during that upload: no more waiting, exit 75 after $TOOK s"
# SIGTERM after a notice's checkpoint is durable, while a later save (a framework's second,
# 1 MB, ~20 s over the link) crawls up: --grace bounds that upload too. It did not: the agent
# waited for it, or for the notice's own deadline (60 s), and a launcher's SIGKILL at its
# grace would have left 137 and no exit event (found by a review).
cat > durable_then_more.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
commit() { mkdir "$d/.$1.tmp"; head -c "$2" /dev/urandom > "$d/.$1.tmp/w.bin"; mv "$d/.$1.tmp" "$d/$1"; }
trap 'commit step-1 100; sleep 0.5; commit step-2 1000000' USR1
printf '{"kind":"preempt","deadline_in":60}' > NOTICE.tmp && mv NOTICE.tmp NOTICE
while :; do sleep 0.05; done
SH
rm -f NOTICE
"$RR_BIN" --grace 3 --drill-file NOTICE --store "s3://$S3_BUCKET/durable-more" \
	--checkpoint-dir "$W/ck-durable-more" -- sh durable_then_more.sh > durable-more.log 2>&1 &
agent=$!
wait_for 60 grep -q 'checkpoint step-1 is durable in the store' durable-more.log || fail "durable-more: step-1 not durable"
wait_for 30 grep -q 'persisting step-2' durable-more.log || fail "durable-more: step-2's persist did not start"
t0=$SECONDS
kill -TERM $agent
set +e; wait $agent; RC=$?; set -e
TOOK=$((SECONDS - t0))
expect_eq "$RC" 75 "SIGTERM after the notice's checkpoint is durable: exit status"
expect_no_grep 'persisted step-2:' durable-more.log "the 20 s upload did not finish first"
[ "$TOOK" -le 15 ] || fail "the agent left $TOOK s after SIGTERM with --grace 3 (the upload needs ~20 s)"
ok "SIGTERM after a notice's checkpoint is durable, a later save uploading: left after $TOOK s (--grace 3), exit 75"
# Multi-node: node 0's pod is deleted (SIGTERM, --grace 2); node 1 takes the notice from the
# store, its trainer commits its part of step-2 (1 MB, ~20 s over the slow link) and leaves.
# Node 0's deadline is that machine's, not node 1's: node 1's part uploads to the end, and
# step-2 is committed. It used to be cut at node 0's deadline, and step-2 never was (found
# by a review). Node 0 talks to the store directly, node 1 through a link of its own (the
# first one still drains what the cut uploads above had sent it).
cat > fan_trainer.sh <<'SH'
rank=$1 bytes=$2
d=$RESUME_RUN_CHECKPOINT_DIR
commit() { mkdir "$d/.$1.tmp"; head -c "$2" /dev/urandom > "$d/.$1.tmp/node$rank.bin"; mv "$d/.$1.tmp" "$d/$1"; }
trap 'commit step-2 "$bytes"; exit 0' USR1
commit step-1 100
while :; do sleep 0.05; done
SH
env AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT" "$RR_BIN" --nnodes 2 --node-rank 0 --run-id fan \
	--grace 2 --checkpoint-dir "$W/fan0" -- sh fan_trainer.sh 0 100 > fan0.log 2>&1 &
n0=$!
"$PY" "$RR_SRC/tests/lib/throttle_proxy.py" --to "127.0.0.1:$S3_PORT" --rate $RATE > proxy2.out 2> proxy2.log &
PROXY2_PID=$!
wait_for 60 grep -q '^ready' proxy2.out || fail "the second throttling proxy did not start"
AWS_ENDPOINT_URL="http://127.0.0.1:$(sed -nE 's/^ready ([0-9]+)/\1/p' proxy2.out)" \
	"$RR_BIN" --nnodes 2 --node-rank 1 --run-id fan --grace 60 --checkpoint-dir "$W/fan1" \
	-- sh fan_trainer.sh 1 1000000 > fan1.log 2>&1 &
n1=$!
wait_for 60 grep -q 'persisted step-1' fan0.log || fail "fan: node 0 did not persist step-1"
wait_for 60 grep -q 'persisted step-1' fan1.log || fail "fan: node 1 did not persist step-1"
kill -TERM $n0
set +e; wait $n0; rc0=$?; set -e
# Then the job is torn down (a JobSet, Slurm): node 1 gets SIGTERM itself, past node 0's
# deadline; its own --grace (60 s) bounds its upload, not node 0's past deadline (it cut at
# once before: found by a review).
wait_for 30 grep -q 'notice: terminate from node' fan1.log || fail "fan: node 1 never took node 0's notice"
sleep 3
kill -TERM $n1
set +e; wait $n1; rc1=$?; set -e
expect_eq "$rc0" 75 "fan: node 0 exit status"
expect_eq "$rc1" 75 "fan: node 1 exit status"
expect_grep 'notice: terminate from node' fan1.log "fan: node 1 took node 0's notice"
expect_grep 'persisted step-2' fan1.log "fan: node 1's part uploaded past node 0's deadline"
AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT" "$RR_BIN" ls --run-id fan > fan-ls.out 2>&1 || fail "fan: ls: $(cat fan-ls.out)"
expect_grep 'step-2 +committed' fan-ls.out "fan: step-2 committed"
ok "multi-node: another node's deadline does not cut this node's part; step-2 committed, both nodes 75"
# The same, with node 1's own machine going too (a zone-wide reclaim: its own notice, a
# drill here, 3 s, while its part crawls up): its own deadline bounds its upload, and it
# leaves 75 at it. The own notice used to be ignored ("another notice ... carrying on").
env AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT" "$RR_BIN" --nnodes 2 --node-rank 0 --run-id fanb \
	--grace 2 --checkpoint-dir "$W/fanb0" -- sh fan_trainer.sh 0 100 > fanb0.log 2>&1 &
n0=$!
AWS_ENDPOINT_URL="http://127.0.0.1:$(sed -nE 's/^ready ([0-9]+)/\1/p' proxy2.out)" \
	"$RR_BIN" --nnodes 2 --node-rank 1 --run-id fanb --drill-file OWN --checkpoint-dir "$W/fanb1" \
	-- sh fan_trainer.sh 1 1000000 > fanb1.log 2>&1 &
n1=$!
wait_for 60 grep -q 'persisted step-1' fanb0.log || fail "fanb: node 0 did not persist step-1"
wait_for 60 grep -q 'persisted step-1' fanb1.log || fail "fanb: node 1 did not persist step-1"
kill -TERM $n0
set +e; wait $n0; set -e
wait_for 30 grep -q 'persisting step-2' fanb1.log || fail "fanb: node 1's part did not start"
t0=$SECONDS
printf '{"kind":"preempt","deadline_in":3}' > OWN.tmp && mv OWN.tmp OWN
set +e; wait $n1; rc1=$?; set -e
TOOK=$((SECONDS - t0))
expect_eq "$rc1" 75 "fanb: node 1 exit status"
expect_grep 'while another node.s is active: this machine is going too' fanb1.log "fanb: its own notice taken"
expect_grep 'deadline passed with the persist unfinished' fanb1.log "fanb: cut at its own deadline"
[ "$TOOK" -le 12 ] || fail "fanb: node 1 left $TOOK s after its own 3 s notice (the upload needs ~20 s)"
ok "multi-node: a node's own notice during another node's bounds its upload by its own deadline (left after $TOOK s, 75)"
finish
