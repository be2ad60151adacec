#!/usr/bin/env bash
# A notice on a degraded link: S3 behind a proxy that moves 50 kB/s each way (slow, never
# stalled, so the stall rule does not fire). The trainer's routine checkpoint is 8 MiB of
# random bytes (about three minutes of upload); a notice arrives while it crawls up. The
# routine upload is set aside at once (its requests in flight end), and the small notice
# checkpoint is durable well before the 40 s deadline; a new machine restores it.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"

RATE=50000
DEADLINE=40
start_s3
"$PY" "$RR_SRC/tests/lib/throttle_proxy.py" --to "127.0.0.1:$S3_PORT" --rate $RATE \
	--stats "$W/link.stats" > proxy.out 2> proxy.log &
PROXY_PID=$!
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'p_rc=$?; kill $PROXY_PID 2>/dev/null; stop_s3; cleanup $p_rc' EXIT
wait_for 20 grep -q '^ready' proxy.out || fail "the throttling proxy did not start"
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
finish
