#!/usr/bin/env bash
# What preemptions cost (`resume-run report`, --metrics-file): a spot machine gets an AWS
# interruption notice (deadline ~120 s) from the metadata test server and makes its
# checkpoint durable; a replacement restores it and finishes; a third start crashes once
# and is restarted. The report, read back from the store's ledger alone, must show the
# machines, the notice, the deadline met, the restores and the restart; --json must parse
# with the right counts; each agent's metrics file must pass promtool and count right.
# Then a SIGTERM whose grace runs out with no checkpoint (a missed deadline), and a report
# read from an S3 store.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/metalib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
trap 'rc=$?; stop_meta; stop_s3; cleanup $rc' EXIT
unset RESUME_RUN_CLOUD

STORE="file://$W/store"
has_checkpoint() { ls ck 2>/dev/null | grep -q '^step-'; }

# metric FILE SERIES: the value of one series (exact name and labels) in a metrics file.
metric() { awk -v s="$2" '$1 == s { print $2; found = 1 } END { if (!found) print "MISSING" }' "$1"; }

check_metrics() { # FILE WHAT
	if command -v promtool >/dev/null; then
		promtool check metrics < "$1" > "$1.check" 2>&1 || { cat "$1.check" >&2; fail "promtool rejects $2"; }
	else
		fail "promtool is not installed (scripts/install-deps.sh test installs prometheus)"
	fi
}

# --- Machine 1: spot, interrupted ---
start_meta aws
( wait_for 60 has_checkpoint && ctl "announce?in=0" ) &
announcer=$!
run_rr m1.log --cloud aws --metadata-endpoint "$META_URL" --poll-interval 1s \
	--checkpoint-dir ck --store "$STORE" --metrics-file "$W/m1.prom" \
	-- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 --checkpoint-every 20 --out out.json
wait $announcer
expect_eq "$RC" "${RR_PREEMPTED:-0}" "machine 1 exit status"
expect_grep 'is durable in the store' m1.log "notice checkpoint durable"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m1.log)
[ -n "$saved" ] || fail "the trainer did not checkpoint on the notice"
# The agent's checkpoint for the notice: the first committed after it asked (a routine one
# that lands at that moment counts), as the report must find it from the ledger.
answer=$(sed -nE 's/.*checkpoint (step-[0-9]+) is durable in the store.*/\1/p' m1.log | head -n 1)
[ -n "$answer" ] || fail "no checkpoint became durable for the notice"
check_metrics m1.prom "machine 1's metrics"
expect_eq "$(metric m1.prom 'resume_run_notices_total{kind="preempt",source="aws"}')" 1 "m1 notices"
# The trainer may commit once more on its way out; that one is persisted as urgent too.
urgent=$(metric m1.prom 'resume_run_checkpoints_persisted_total{trigger="notice"}')
routine=$(metric m1.prom 'resume_run_checkpoints_persisted_total{trigger="routine"}')
[ "$urgent" -ge 1 ] && [ "$routine" -ge 1 ] || fail "m1: notice checkpoints $urgent, routine $routine"
expect_eq "$(metric m1.prom resume_run_deadlines_met_total)" 1 "m1 deadlines met"
expect_eq "$(metric m1.prom resume_run_deadline_misses_total)" 0 "m1 deadline misses"
expect_eq "$(metric m1.prom resume_run_restores_total)" 0 "m1 restores"
expect_eq "$(metric m1.prom resume_run_persist_duration_seconds_count)" $((routine + urgent)) "m1 persists in the histogram"
last=$(metric m1.prom resume_run_last_durable_checkpoint_timestamp_seconds)
"$PY" -c 'import sys,time; t=float(sys.argv[1]); sys.exit(0 if time.time()-600 < t <= time.time() else 1)' "$last" ||
	fail "m1: last durable timestamp $last is not a recent Unix time"
expect_grep '^resume_run_build_info\{version="[^"]+"\} 1$' m1.prom "build info"
ls "$W"/.m1.prom.tmp.* >/dev/null 2>&1 && fail "a temp file of the metrics was left behind"
ok "machine 1: AWS notice -> step-$saved durable; metrics pass promtool, 1 notice, 1 deadline met, $routine+$urgent persists"

# --- Machine 2: a replacement (nothing local) restores and finishes ---
ctl reset
rm -rf ck
run_rr m2.log --cloud aws --metadata-endpoint "$META_URL" --poll-interval 1s \
	--checkpoint-dir ck --store "$STORE" --metrics-file "$W/m2.prom" \
	-- "$PY" "$TRAINER" --steps $((saved + 30)) --step-time 0.01 --checkpoint-every 20 --out out.json
expect_eq "$RC" 0 "machine 2 exit status"
expect_grep "restored step-$saved" m2.log "restore logged"
check_metrics m2.prom "machine 2's metrics"
expect_eq "$(metric m2.prom resume_run_restores_total)" 1 "m2 restores"
[ "$(metric m2.prom resume_run_restored_bytes_total)" -gt 0 ] || fail "m2: no restored bytes"
expect_eq "$(metric m2.prom resume_run_deadline_misses_total)" 0 "m2 deadline misses"
ok "machine 2: restored step-$saved and finished; metrics count the restore"
stop_meta

# --- Machine 3: the trainer crashes once and is restarted ---
RESUME_RUN_METRICS_FILE="$W/m3.prom" run_rr m3.log --cloud none --checkpoint-dir ck --store "$STORE" \
	--max-restarts 2 -- sh -c '[ -f crashed ] || { touch crashed; exit 3; }'
expect_eq "$RC" 0 "machine 3 exit status"
check_metrics m3.prom "machine 3's metrics (from RESUME_RUN_METRICS_FILE)"
expect_eq "$(metric m3.prom resume_run_restarts_total)" 1 "m3 restarts"
ok "machine 3: one crash, one restart; RESUME_RUN_METRICS_FILE honoured"

# --- The report, from the ledger alone ---
"$RR_BIN" report --store "$STORE" > report.txt 2> report.err || fail "report failed: $(cat report.err)"
cat report.txt
expect_grep "^  1 +[^ ]+ +aws +g5.xlarge +us-east-1a +spot " report.txt "machine 1 line: aws, type, zone, spot"
expect_grep "^  aws +preempt +from aws +1$" report.txt "notice counted by cloud, kind and source"
expect_grep " preempt +aws +[12] min [0-9]+ s +$answer +[0-9.]+ (ms|s) +met, .* to spare +0 ms" report.txt \
	"the notice: deadline, its checkpoint, met, no work lost"
expect_grep "Preemptions: 1; deadlines met 1, missed 0" report.txt "totals"
expect_grep "machine 2  step-$saved: .* read from the store, in .*; fallbacks 0" report.txt "the restore"
expect_grep "machine 3  exit status 3, restart 1" report.txt "the restart"
# How each machine ended, from its exit event: the interrupted one, the finished ones.
expect_grep "^  1 .* scratch +preempted \($RR_PREEMPTED\)$" report.txt "machine 1 ended preempted"
expect_grep "^  2 .* a checkpoint +finished$" report.txt "machine 2 finished"
expect_grep "^  3 .* a checkpoint +finished$" report.txt "machine 3 finished after its restart"
# A run of seconds is said in seconds (it was "Machine time: 0.00 h").
expect_grep "^Machine time: [0-9.]+ s \([0-9.]+ s spot or unknown, 0 ms on-demand\); useful [0-9.]+ s$" \
	report.txt "short machine time in seconds"
ok "report: machines and how each ended, the AWS notice met its deadline with $answer, the restore of step-$saved and the restart"

"$RR_BIN" report --store "$STORE" --json --price-spot 0.40 --price-on-demand 1.20 > report.json ||
	fail "report --json failed"
"$PY" - report.json "$saved" "$answer" <<'PY' || fail "report --json: wrong content"
import json, sys
r = json.load(open(sys.argv[1]))
saved, answer = "step-" + sys.argv[2], sys.argv[3]
t = r["totals"]
def eq(a, b, what):
    if a != b:
        sys.exit("%s: expected %r, got %r" % (what, b, a))
eq(r["schema"], 1, "schema")
eq(t["machines"], 3, "machines")
eq(t["machines_lost"], 0, "machines lost")
eq([(m["ended"], m["exit_status"]) for m in r["machines"]],
   [("preempted", 75), ("finished", 0), ("finished", 0)], "how each machine ended")
eq(t["notices"], 1, "notices")
eq(t["preemptions"], 1, "preemptions")
eq(t["deadlines_met"], 1, "deadlines met")
eq(t["deadlines_missed"], 0, "deadlines missed")
eq(t["work_lost_seconds"], 0, "work lost")
eq(t["restores"], 2, "restores (machine 2, and machine 3 finding it on disk)")
eq(t["restarts"], 1, "restarts")
assert t["notice_checkpoints"] >= 1, t
n = r["notices"][0]
eq((n["kind"], n["source"], n["deadline"], n["checkpoint"]), ("preempt", "aws", "met", answer), "notice")
dl = (n["deadline_unix_ms"] - n["received_unix_ms"]) / 1000
assert 100 <= dl <= 121, "deadline %.1f s after the notice" % dl
assert 0 <= n["to_durable_seconds"] < dl and n["margin_seconds"] > 0, n
eq(r["notice_counts"], [{"cloud": "aws", "kind": "preempt", "source": "aws", "count": 1}], "notice counts")
m1 = r["machines"][0]
eq((m1["cloud"], m1["instance_id"], m1["instance_type"], m1["zone"], m1["lifecycle"]),
   ("aws", "i-0123456789abcdef0", "g5.xlarge", "us-east-1a", "spot"), "machine 1")
eq((m1["restored"], r["machines"][1]["restored"]), (False, True), "started from")
s = r["restores"][0]
eq((s["machine"], s["checkpoint"], s["fallbacks"], s["already_present"]), (2, saved, 0, False), "restore")
assert s["bytes"] > 0 and s["downloaded_bytes"] > 0, s
eq(r["restarts"][0]["exit_status"], 3, "restart exit status")
assert t["bytes_checkpointed"] > 0 and 0 < t["bytes_stored"], t
c = r["cost"]
want = t["spot_hours"] * 0.40 + t["on_demand_hours"] * 1.20
assert abs(c["cost"] - want) < 1e-9, (c, want)
assert abs(c["on_demand_cost"] - t["useful_hours"] * 1.20) < 1e-9, c
print("json ok: %d machines, notice met with %.1f s to spare, cost %.6f vs %.6f on-demand"
      % (t["machines"], n["margin_seconds"], c["cost"], c["on_demand_cost"]))
PY
ok "report --json parses; counts, the notice, the restore and the cost estimate are right"

# --- A missed deadline: SIGTERM, a trainer that never checkpoints, 1 s of grace ---
"$RR_BIN" --cloud none --checkpoint-dir ck-missed --store "$STORE" --run-id missed --grace 1 \
	--metrics-file "$W/m4.prom" -- sh -c 'trap "" USR1; while :; do sleep 0.1; done' > m4.log 2>&1 &
agent=$!
wait_for 20 grep -q 'started sh' m4.log || fail "machine 4 did not start"
kill -TERM $agent
wait $agent || true
expect_grep 'deadline reached before the checkpoint was durable' m4.log "the grace ran out"
check_metrics m4.prom "machine 4's metrics"
expect_eq "$(metric m4.prom 'resume_run_notices_total{kind="terminate",source="signal"}')" 1 "m4 notices"
expect_eq "$(metric m4.prom resume_run_deadline_misses_total)" 1 "m4 deadline misses"
expect_eq "$(metric m4.prom resume_run_deadlines_met_total)" 0 "m4 deadlines met"
"$RR_BIN" report --store "$STORE" --run-id missed > missed.txt || fail "report of run 'missed' failed"
expect_grep " terminate +signal +[0-9.]+ m?s +- +- +MISSED \(never durable\) +[0-9.]+ (ms|s)$" missed.txt "the missed notice"
"$RR_BIN" report --store "$STORE" --run-id missed --json > missed.json
"$PY" - missed.json <<'PY' || fail "report --json of run 'missed': wrong content"
import json, sys
r = json.load(open(sys.argv[1]))
n, t = r["notices"][0], r["totals"]
assert (n["kind"], n["source"], n["deadline"], n["checkpoint"]) == ("terminate", "signal", "missed", None), n
assert n["margin_seconds"] is None and n["to_durable_seconds"] is None, n
assert n["work_lost_seconds"] > 0 and n["work_lost_seconds"] == n["at_risk_seconds"], n
assert (t["deadlines_missed"], t["deadlines_met"], t["machines"]) == (1, 0, 1), t
assert r["machines"][0]["ended"] == "preempted", r["machines"]
PY
ok "missed deadline: SIGTERM with 1 s grace and no checkpoint -> metrics and report say missed, work lost"

# --- A machine lost without a word (the agent killed, no notice), then one that finishes.
# Its checkpoints share packs: unchanged small files stay in the first checkpoint's pack,
# which the restore reads whole.
cat > packs.py <<'PY'
import os, sys, time
import resume_run as rr
ck = rr.Checkpointer()
frozen = bytes(range(256)) * 4
first = int(os.path.basename(rr.restore_dir() or "step-0").split("-")[1]) + 1
for step in range(first, first + 3):
    with ck.commit("step-%d" % step) as d:
        for i in range(20):
            with open(os.path.join(d, "f%02d.bin" % i), "wb") as f:
                f.write(frozen + bytes([i]) if i < 10 else os.urandom(1000))
    print("committed step-%d" % step, flush=True)
if sys.argv[1] == "hang":
    time.sleep(600)
PY
"$RR_BIN" --cloud none --checkpoint-dir ck-lost --store "$STORE" --run-id lost \
	-- "$PY" packs.py hang > m5.log 2>&1 &
agent=$!
wait_for 60 grep -q 'persisted step-3' m5.log || fail "machine 5 did not persist step-3"
trainer=$(sed -nE 's/.*started [^ ]+ \(pid ([0-9]+),.*/\1/p' m5.log | head -n 1)
kill -KILL $agent
wait $agent || true
[ -n "$trainer" ] && kill -KILL "$trainer" 2>/dev/null || true
run_rr m6.log --cloud none --checkpoint-dir ck-lost2 --store "$STORE" --run-id lost -- "$PY" packs.py finish
expect_eq "$RC" 0 "machine 6 exit status"
expect_grep "restored step-3: 20 files, .* read from the store, [0-9.]+ [kM]?B of it other checkpoints' data in shared packs" \
	m6.log "the restore says what of its reads belongs to other checkpoints"
"$RR_BIN" report --store "$STORE" --run-id lost > lost.txt || fail "report of run 'lost' failed"
cat lost.txt
expect_grep "^  1 .* scratch +lost$" lost.txt "the killed machine is lost"
expect_grep "^  2 .* a checkpoint +finished$" lost.txt "the replacement finished"
expect_grep "^  1 machine recorded no end: lost without a word" lost.txt "the loss is said"
expect_grep "machine 2  step-3: .* read from the store \([0-9.]+ [kM]?B of it other checkpoints' data in shared packs\)" \
	lost.txt "the report says why more was read than stored"
"$RR_BIN" report --store "$STORE" --run-id lost --json > lost.json
"$PY" - lost.json <<'PY' || fail "report --json of run 'lost': wrong content"
import json, sys
r = json.load(open(sys.argv[1]))
m, t, s = r["machines"], r["totals"], r["restores"][0]
assert [x["ended"] for x in m] == ["lost", "finished"], m
assert m[0]["exit_status"] is None and m[1]["exit_status"] == 0, m
assert t["machines_lost"] == 1, t
assert 0 < s["unused_bytes"] < s["downloaded_bytes"], s
PY
ok "a machine killed without a word is reported lost, its replacement finished; shared-pack reads are said"

# --- The report from an S3 store (a drill with a deadline in the notice file) ---
start_s3
s3_env
S3STORE="s3://$S3_BUCKET/reports"
rm -rf ck
( wait_for 60 has_checkpoint && echo '{"kind":"preempt","deadline_in":90}' > NOTICE ) &
announcer=$!
run_rr s3.log --cloud none --drill-file NOTICE --checkpoint-dir ck --store "$S3STORE" \
	-- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 --checkpoint-every 20 --out out.json
wait $announcer
expect_eq "$RC" "${RR_PREEMPTED:-0}" "S3 drill exit status"
"$RR_BIN" report --store "$S3STORE" --json > s3.json 2> s3-report.err || fail "report from S3: $(cat s3-report.err)"
"$PY" - s3.json <<'PY' || fail "report --json from S3: wrong content"
import json, sys
r = json.load(open(sys.argv[1]))
n, t = r["notices"][0], r["totals"]
assert (n["kind"], n["source"], n["deadline"]) == ("preempt", "file", "met"), n
# deadline_unix is whole seconds, from the whole second the notice was read in; received_unix_ms
# is taken a moment later, to the millisecond: up to a second (and the notice file's fsync) apart.
assert 88 <= (n["deadline_unix_ms"] - n["received_unix_ms"]) / 1000 <= 91, n
assert (t["machines"], t["notices"], t["deadlines_met"]) == (1, 1, 1), t
assert 1 <= t["notice_checkpoints"] <= t["checkpoints"] and r["events_skipped"] == 0, t
PY
ok "report from an S3 store: the drill's notice met its 90 s deadline"

run_rr empty.txt report --store "$STORE" --run-id nosuchrun
expect_eq "$RC" 125 "report of a run the store does not hold: exit status"
expect_grep "no run 'nosuchrun' in $STORE; runs there: default, lost, missed" empty.txt "the runs that exist are named"
ok "report of a run the store does not hold: 125, naming the runs it does"
finish
