#!/usr/bin/env bash
# Two machines on one store at once, on file:// and on s3:// (s3rver behind the fault proxy,
# which enforces If-None-Match / If-Match as S3 does; its objects are files, aged by hand):
# the scenario of twowriterslib.sh (the old machine stopped in the middle of persisting
# step-4 while the new one restores step-3, commits its own step-4..6 and retires old
# checkpoints; LATEST only forward, every checkpoint verifies, old chunks deduplicated
# against written again, no success reported for another machine's step-4).
# Then one stray far-future name (step-9999999999) restored from the store: later commits,
# the notice's included, are persisted, with one warning naming it.
. "$(dirname "$0")/lib.sh"
S3_SERVER=s3rver
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/faultlib.sh"
. "$RR_SRC/tests/integration/twowriterslib.sh"
trap 's3_rc=$?; release_agents; stop_faults; stop_s3; (exit $s3_rc); cleanup' EXIT

# file:// and s3:// keep LATEST and the chunks on this machine's disk: read and aged there.
tw_latest() { cat "$TW_LATEST" 2>/dev/null; }
tw_mark_old() { find "$TW_CHUNKS" -type f > "$1/old-chunks"; }
tw_age_old() { xargs -r touch -d '2 hours ago' < "$1/old-chunks"; }

TW_LATEST="$W/store/default/LATEST" TW_CHUNKS="$W/store/default/chunks"
scenario file "file://$W/store"

start_s3
s3_env
start_faults
TW_LATEST="$S3_DIR/$S3_BUCKET/runs/default/LATEST._S3rver_object"
TW_CHUNKS="$S3_DIR/$S3_BUCKET/runs/default/chunks"
scenario s3 "s3://$S3_BUCKET/runs"

# --- one stray far-future name ---
d="$W/stray"
mkdir -p "$d/gate1" "$d/gate2"
export RESUME_RUN_STORE="file://$W/stray-store"
touch "$d/gate1/commit-step-9999999999" "$d/gate1/stop"
run_rr "$d/m1.log" --checkpoint-dir "$d/ckpt1" -- "$PY" "$GATED" --gate "$d/gate1" step-9999999999
expect_eq "$RC" 0 "stray: first machine"
expect_grep "persisted step-9999999999" "$d/m1.log" "stray: the far-future name is stored"

( wait_for 60 grep -qs "trainer a: committed step-11" "$d/m2.log" &&
	wait_for 60 grep -qs "persisted step-11" "$d/m2.log" && touch "$d/NOTICE" ) &
notice_pid=$!
touch "$d/gate2/commit-step-10" "$d/gate2/commit-step-11"
run_rr "$d/m2.log" --checkpoint-dir "$d/ckpt2" --drill-file "$d/NOTICE" -- \
	"$PY" "$GATED" --gate "$d/gate2" --on-signal step-12 step-10 step-11
wait $notice_pid || fail "stray: step-11 was not persisted ($(grep -c . "$d/m2.log") log lines)"
expect_eq "$RC" "${RR_PREEMPTED:-0}" "stray: exit status after the notice"
expect_grep "restored step-9999999999" "$d/m2.log" "stray: restored the far-future name"
expect_grep "checkpoint step-12 is durable in the store" "$d/m2.log" \
	"stray: the notice's checkpoint is durable"
expect_eq "$(grep -c "sorts after" "$d/m2.log")" 1 "stray: warnings about the far-future name"
expect_grep "warning: .*checkpoint step-9999999999 sorts after" "$d/m2.log" \
	"stray: the warning names it"
"$RR_BIN" ls > "$d/ls.out"
for s in 11 12; do
	expect_grep "^. step-$s +committed" "$d/ls.out" "stray: step-$s in the store"
done
ok "stray: after a restored step-9999999999, step-11 and the notice's step-12 were persisted, with one warning naming it"

finish
