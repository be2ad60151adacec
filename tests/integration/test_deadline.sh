#!/usr/bin/env bash
# Deadline awareness (docs/performance.md, "How fast"). With --every the newest committed
# checkpoint is kept durable in the background, so a notice with a short deadline only has to
# persist what changed since: the log says up front that it fits, the notice checkpoint writes
# only its fresh bytes, and it is durable before the deadline; the same through SIGTERM with
# --grace. Then, over a throttled link where the deadline cannot be met, the log predicts the
# miss and names the checkpoint a new machine would restore, and the ledger's notice event keeps
# the prediction.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"

FROZEN=$((8 << 20))   # unchanged between checkpoints
FRESH=$((64 << 10))   # new in every checkpoint
T="$RR_SRC/tests/integration/trainers/frozen_and_fresh.py"
start_s3
s3_env

# --- 1. --every keeps the store current; a 10 s notice persists only the delta in time.
mkdir a && cd a
export RESUME_RUN_STORE="s3://$S3_BUCKET/every"
(
	# Two routine checkpoints durable first: the rate is measured, the store current.
	wait_for 120 sh -c "[ \$(grep -cs 'persisted step-[0-9]*:' ../a.log) -ge 2 ]"
	printf '{"kind":"preempt","deadline_in":10}\n' > NOTICE
) &
notice_pid=$!
run_rr ../a.log -v --every 1s --drill-file NOTICE -- "$PY" "$T" $FROZEN $FRESH
wait $notice_pid
cd ..
expect_eq "$RC" "${RR_PREEMPTED:-0}" "run 1 exit status"
expect_grep 'persisted step-1: 2 files, 8.5 MB -> 8.5 MB stored, 8.5 MB new' a.log \
	"the first checkpoint is written in full"
expect_grep 'notice: deadline in 10 s; at the recent [0-9.]+ [kMG]?B/s the expected checkpoint \(8.5 MB, like step-[0-9]+, of which about [0-9.]+ kB new\) needs ~[0-9]+ s: it should be durable with [0-9]+ s to spare' \
	a.log "the notice's estimate: it fits, and only the fresh part is new"
durable=$(grep -m1 -E 'checkpoint step-[0-9]+ is durable in the store: [0-9.]+ s after the notice, [0-9.]+ s before the deadline' a.log || true)
[ -n "$durable" ] || fail "the notice checkpoint was not durable before the deadline"
name=$(sed -nE 's/.*checkpoint (step-[0-9]+) is durable.*/\1/p' <<< "$durable")
before=$(sed -nE 's/.*s after the notice, ([0-9.]+) s before the deadline.*/\1/p' <<< "$durable")
line=$(grep -m1 -E "persisted $name: " a.log || true)
new=$(sed -nE 's/.*stored, ([0-9.]+ [kMG]?B) new.*/\1/p' <<< "$line")
case "$new" in
*" kB" | *" B") ;;
*) fail "the notice checkpoint $name wrote $new (expected only its 64 KiB fresh part): $line" ;;
esac
expect_grep "persisted $name: 2 files, .* [0-9]+ of [0-9]+ segments unchanged" a.log \
	"the notice checkpoint reused the frozen segments"
routine=$(($(grep -c 'persisted step-[0-9]*:' a.log) - 1))
[ "$routine" -ge 2 ] || fail "expected routine checkpoints persisted in the background before the notice"
ok "with --every: $routine checkpoints persisted in the background; the notice's $name wrote $new of 8.5 MB, durable $before s before the 10 s deadline"
grep -E 'notice: deadline in' a.log | sed 's/^/    /'

# --- 1b. The same through SIGTERM with --grace 5 (the deadline a container stop gives).
mkdir c && cd c
export RESUME_RUN_STORE="s3://$S3_BUCKET/grace"
"$RR_BIN" -v --every 1s --grace 5 -- "$PY" "$T" $FROZEN $FRESH > ../c.log 2>&1 &
agent=$!
wait_for 120 sh -c "[ \$(grep -c 'persisted step-[0-9]*:' ../c.log) -ge 2 ]" ||
	fail "no routine checkpoints persisted"
kill -TERM $agent 2>/dev/null || true # (it may have ended already: the checks below say how)
set +e
wait $agent
RC=$?
set -e
cd ..
expect_grep 'notice: deadline in 5 s; at the recent .* of which about [0-9.]+ kB new\) needs ~[0-9]+ s: it should be durable with [0-9]+ s to spare' \
	c.log "SIGTERM: the estimate says it fits"
durable=$(grep -m1 -E 'checkpoint step-[0-9]+ is durable in the store: [0-9.]+ s after the notice, [0-9.]+ s before the deadline' c.log || true)
[ -n "$durable" ] || fail "SIGTERM: the notice checkpoint was not durable before the deadline"
name=$(sed -nE 's/.*checkpoint (step-[0-9]+) is durable.*/\1/p' <<< "$durable")
after=$(sed -nE 's/.*durable in the store: ([0-9.]+) s after the notice.*/\1/p' <<< "$durable")
new=$(sed -nE "/persisted $name: /{s/.*stored, ([0-9.]+ [kMG]?B) new.*/\\1/p;q}" c.log)
case "$new" in
*" kB" | *" B") ;;
*) fail "SIGTERM: the notice checkpoint $name wrote $new (expected only its fresh part)" ;;
esac
ok "SIGTERM with --grace 5: $name wrote $new, durable $after s after the signal (exit status $RC)"

# --- 2. A link too slow for the deadline: the miss is predicted, with what a new machine
# would restore.
RATE=200000
"$PY" "$RR_SRC/tests/lib/throttle_proxy.py" --to "127.0.0.1:$S3_PORT" --rate $RATE \
	> proxy.out 2> proxy.log &
PROXY_PID=$!
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'p_rc=$?; kill $PROXY_PID 2>/dev/null || true; stop_s3; cleanup $p_rc' EXIT
wait_for 60 grep -qs '^ready' proxy.out || fail "the throttling proxy did not start"
PPORT=$(sed -nE 's/^ready ([0-9]+)/\1/p' proxy.out)
mkdir b && cd b
export AWS_ENDPOINT_URL="http://127.0.0.1:$PPORT"
export RESUME_RUN_STORE="s3://$S3_BUCKET/slow"
(
	wait_for 120 grep -qs 'persisted step-1:' ../b.log
	printf '{"kind":"preempt","deadline_in":3}\n' > NOTICE
) &
notice_pid=$!
# Every checkpoint is all new (no frozen part): 1 MiB, about 5 s over this link.
run_rr ../b.log -v --drill-file NOTICE -- "$PY" "$T" 0 $((1 << 20))
wait $notice_pid
cd ..
expect_grep 'notice: deadline in 3 s; at the recent [0-9.]+ kB/s the expected checkpoint \(1.0 MB, like step-1\) needs ~[0-9]+ s: it will likely miss the deadline by [0-9]+ s; step-1 \(durable [0-9]+ s ago\) is what a new machine would restore' \
	b.log "the notice's estimate predicts the miss and names step-1"
miss=$(grep -m1 -E 'notice: deadline in 3 s' b.log || true)
need=$(sed -nE 's/.*needs ~([0-9]+) s.*/\1/p' <<< "$miss")
expect_grep 'deadline passed with the persist unfinished' b.log "the prediction came true"
expect_no_grep 'is durable in the store' b.log "no notice checkpoint was durable in time"
# What a new machine would restore is indeed step-1.
export AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
"$RR_BIN" ls > ls.out 2>&1 || fail "ls: $(cat ls.out)"
expect_grep '^\* step-1 +committed' ls.out "step-1 is LATEST"
expect_eq "$(grep -c committed ls.out)" 1 "committed checkpoints in the slow store"
# The ledger's notice event keeps the prediction beside the outcome.
nkey=$(s3cli s3 ls --recursive "s3://$S3_BUCKET/slow/" | awk '$4 ~ /events\/[0-9]+-notice\.json$/ && !k {k = $4} END {print k}')
[ -n "$nkey" ] || fail "no notice event in the slow store's ledger"
s3cli s3 cp --quiet "s3://$S3_BUCKET/$nkey" notice-event.json
"$PY" - notice-event.json <<'PYEOF' || fail "notice event: $(cat notice-event.json)"
import json, sys
ev = json.load(open(sys.argv[1]))
assert ev["expected_to_fit"] is False, ev
assert ev["expected_bytes"] == 1 << 20, ev
assert ev["expected_persist_ms"] > 3000, ev
assert 100000 < ev["throughput_bps"] < 400000, ev
PYEOF
ok "over $RATE B/s: predicted ~$need s for the notice checkpoint against a 3 s deadline, missed as said; step-1 is what the store offers (exit status $RC)"
echo "    ${miss//$'\n'/$'\n'    }"
finish
