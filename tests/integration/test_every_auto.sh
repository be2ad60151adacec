#!/usr/bin/env bash
# --every auto (docs/performance.md, "How often to checkpoint"), on the S3 test server with a
# real trainer and agent: 0. `resume-run simulate`, its JSON and a trace file; 1. a checkpoint
# that stalls the trainer 0.2 s and losses every 20 s (--mtbf): the interval the agent uses
# converges to Daly's, 2.70 s, within 10% (its log, the asks' spacing, the metrics file), and
# `report` shows the interval, the stall spent and the hindsight; 2. --max-overhead 5 (the
# default) lengthens it to 20 times the measured stall; 3. without --mtbf a machine reads the
# run's history: three earlier machines that vanished make the MTBF (24 h + their time) / 4; 4.
# the notice-lead rule on a throttled link: the interval shrinks so that a notice just before
# the next checkpoint is still durable within its 3 s lead, where Daly's interval (as a fixed
# one) misses it.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"

T="$RR_SRC/tests/integration/trainers/paced.py"
start_s3
s3_env

# msgs LOG: the agent's json log lines' messages, one a line
msgs() { "$PY" -c 'import json,sys
for l in open(sys.argv[1]):
    if l.startswith("{"): print(json.loads(l)["msg"])' "$1"; }
# within A B PCT: |A/B - 1| <= PCT%
within() { "$PY" -c 'import sys; a,b,p=map(float,sys.argv[1:]); sys.exit(0 if abs(a/b-1)<=p/100 else 1)' "$@"; }
daly() { "$PY" -c 'import math,sys; d,m=map(float,sys.argv[1:]); x=d/(2*m); print(math.sqrt(2*d*m)*(1+math.sqrt(x)/3+x/9)-d)' "$@"; }

# --- 0. `simulate`: Daly's case as JSON; a trace file, and a broken one.
"$RR_BIN" simulate --cost 5m --mtbf 24h --hours 2000 --json > sim.json 2> sim.err ||
	fail "simulate: $(cat sim.err)"
"$PY" - sim.json <<'PYEOF' || fail "simulate --json: $(cat sim.json)"
import json, sys
j = json.load(open(sys.argv[1]))
assert abs(j["interval_s"] / 60 - 116.7) < 0.05 and j["interval_bound"] == "daly", j
names = [p["policy"] for p in j["policies"]]
assert names[0].startswith("auto") and names[-1] == "best fixed (hindsight)", names
assert all(p["waste_s"] >= j["policies"][-1]["waste_s"] for p in j["policies"][2:]), j
PYEOF
printf '# seconds, kind\n3600 loss\n7200 notice\n' > trace.txt
"$RR_BIN" simulate --cost 30s --trace trace.txt > sim.txt 2>&1 || fail "simulate --trace: $(cat sim.txt)"
expect_grep '^Replayed trace.txt: 2.0 h of training; losses no notice covered: 1; notices in time: 1$' \
	sim.txt "the trace's losses and notices"
printf '3600 loss\n60 loss\n' > bad.txt
run_rr sim-bad.txt simulate --cost 30s --trace bad.txt
expect_eq "$RC" 125 "simulate over a broken trace"
expect_grep 'trace bad.txt: line 2: time 60.000 is before the line above' sim-bad.txt \
	"the broken line named"
ok "simulate: Daly's 116.7 min for 5 min and 24 h; a trace replayed; a broken one named"

# --- 1. Daly's interval, within 10%.
mkdir m1 && cd m1
export RESUME_RUN_STORE="s3://$S3_BUCKET/daly"
run_rr ../daly.log --log-format json --every auto --mtbf 20s --max-overhead 20 \
	--metrics-file "$W/daly.prom" -- "$PY" "$T" --save-time 0.2 --seconds 18
cd ..
expect_eq "$RC" 0 "run 1 exit status"
msgs daly.log > daly.txt
expect_grep '^every auto: a checkpoint every [0-9.]+ s: Daly.s interval \(cost 1.00 s, assumed until one is measured; MTBF 20.0 s, from --mtbf\)' \
	daly.txt "the first interval, from the assumed cost"
# The stall as the trainer itself timed it (0.2 s, plus what a loaded machine adds to it):
# the checkpoint's known cost, which the agent only sees from outside.
stall=$("$PY" -c 'import re,statistics,sys
print(statistics.median(float(m) for m in re.findall(r"committed step-[0-9]+ in ([0-9.]+) s", open(sys.argv[1]).read())))' daly.log)
want=$(daly "$stall" 20)
last=$(grep -E '^every auto: a checkpoint every' daly.txt | tail -n 1)
got=$(sed -nE 's/^every auto: a checkpoint every ([0-9.]+) s: Daly.s interval.*/\1/p' <<< "$last")
[ -n "$got" ] || fail "no Daly interval logged: $last"
within "$got" "$want" 10 || fail "interval $got s is not within 10% of Daly's $want s for the trainer's $stall s: $last"
# The asks' spacing: each comes that interval after the commit before it.
spacing=$("$PY" - daly.log <<'PYEOF'
import json, re, statistics, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
commits = [e["ts"] for e in ev if re.match(r"checkpoint step-[0-9]+ committed$", e["msg"])]
asks = [e["ts"] for e in ev if e["msg"].startswith("asked the trainer")]
gaps = [a - max(c for c in commits if c < a) for a in asks[2:] if any(c < a for c in commits)]
print("%.3f %d" % (statistics.median(gaps), len(gaps)) if gaps else "0 0")
PYEOF
)
read -r gap ngaps <<< "$spacing"
[ "$ngaps" -ge 2 ] || fail "only $ngaps asks after the interval settled"
within "$gap" "$want" 10 || fail "the asks came $gap s after each commit, not Daly's $want s"
m_iv=$(sed -nE 's/^resume_run_checkpoint_interval_seconds ([0-9.]+)$/\1/p' daly.prom)
m_cost=$(sed -nE 's/^resume_run_checkpoint_cost_seconds ([0-9.]+)$/\1/p' daly.prom)
within "$m_iv" "$want" 10 || fail "metrics: interval $m_iv s"
within "$m_cost" "$stall" 25 || fail "metrics: cost $m_cost s for a $stall s stall"
expect_grep '^resume_run_uncovered_mtbf_seconds 20.000$' daly.prom "metrics: the MTBF"
expect_grep '^resume_run_checkpoint_stall_seconds_total [0-9.]+$' daly.prom "metrics: the stall"
if command -v promtool >/dev/null; then
	promtool check metrics < daly.prom > promtool.out 2>&1 || fail "promtool: $(cat promtool.out)"
fi
"$RR_BIN" report > report.txt 2>&1 || fail "report: $(cat report.txt)"
expect_grep '^Checkpoint interval \(--every auto\)$' report.txt "report: the section"
expect_grep '^  used: .*; checkpoint cost [0-9]+ ms \(median of [0-9]+ stalls\)$' report.txt \
	"report: the interval used and its cost"
expect_grep '^  spent: .* stalled \([0-9]+ periodic checkpoints\), 0 ms lost to 0 losses' \
	report.txt "report: the stall spent, nothing lost"
"$RR_BIN" report --json > report.json 2>&1 || fail "report --json: $(cat report.json)"
"$PY" - report.json "$want" <<'PYEOF' || fail "report --json: $(cat report.json)"
import json, sys
iv = json.load(open(sys.argv[1]))["interval"]
assert iv["mode"] == "auto" and iv["stalls"] >= 3, iv
assert abs(iv["interval_seconds"] / float(sys.argv[2]) - 1) <= 0.1, iv
assert 0.15 < iv["cost_seconds"] < 0.3 and iv["overhead_seconds"] > 0.5, iv
PYEOF
cost=$(sed -nE 's/.*\(cost ([0-9]+ ms), the median of.*/\1/p' <<< "$last")
ok "a ${stall} s stall (the agent measured $cost) and --mtbf 20s: interval $got s, asks $gap s after each commit (median of $ngaps); Daly's is $(printf %.3f "$want") s ($(printf %.3f "$(daly 0.2 20)") s for 0.2 s)"

# --- 2. The stall bound: at most 5% of training time.
mkdir m2 && cd m2
export RESUME_RUN_STORE="s3://$S3_BUCKET/bound"
run_rr ../bound.log --every auto --mtbf 20s -- "$PY" "$T" --save-time 0.2 --seconds 12
cd ..
expect_eq "$RC" 0 "run 2 exit status"
line=$(grep -E 'every auto: a checkpoint every [0-9.]+ s: the stall bound \(--max-overhead 5%\); Daly.s interval would be [0-9.]+ s \(cost [0-9]+ ms' bound.log | tail -n 1)
[ -n "$line" ] || fail "the stall bound was not applied: $(grep 'every auto' bound.log)"
iv=$(sed -nE 's/.*a checkpoint every ([0-9.]+) s:.*/\1/p' <<< "$line")
cost=$(sed -nE 's/.*\(cost ([0-9]+) ms,.*/\1/p' <<< "$line")
within "$iv" "$("$PY" -c "print($cost / 1000 / 0.05)")" 2 || fail "bound $iv s for a $cost ms stall"
ok "--max-overhead 5: interval $iv s for a $cost ms stall (Daly's would stall more)"

# --- 3. The run's history: three machines lost without a notice, then a fourth.
export RESUME_RUN_STORE="s3://$S3_BUCKET/history"
for m in 1 2 3; do
	mkdir "h$m"
	(cd "h$m" && exec "$RR_BIN" --every 1s -- "$PY" "$T" --save-time 0.05 --seconds 60) \
		> "h$m.log" 2>&1 &
	agent=$!
	wait_for 60 grep -qs 'persisted step-' "h$m.log" || fail "machine $m persisted nothing"
	kill -KILL $agent # the machine is gone: no notice, no exit (its trainer gets SIGTERM)
	wait $agent 2>/dev/null || true
done
mkdir h4 && cd h4
run_rr ../h4.log --every auto -- "$PY" "$T" --save-time 0.05 --seconds 4
cd ..
expect_eq "$RC" 0 "run 3 exit status"
expect_grep "every auto: the run's history: 3 earlier machines in [0-9.]+ s, 3 lost with no notice covering them \(3 vanished, 0 missed a deadline\); checkpoint cost there [0-9]+ ms" \
	h4.log "the history read from the ledger"
expect_grep 'every auto: a checkpoint every .*MTBF 6 h 00 min, 3 uncovered losses in [0-9.]+ s of the run, with the no-cloud prior of 1 d 00 h worth one\)' \
	h4.log "the MTBF: (24 h + their time) / (1 + 3)"
ok "three vanished machines: MTBF (24 h + history) / 4 = 6 h"

# --- 4. The notice-lead rule, over a 400 kB/s link with a 3 s lead (--grace 3).
RATE=400000
"$PY" "$RR_SRC/tests/lib/throttle_proxy.py" --to "127.0.0.1:$S3_PORT" --rate $RATE \
	> proxy.out 2> proxy.log &
PROXY_PID=$!
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'p_rc=$?; kill $PROXY_PID 2>/dev/null; stop_s3; (exit $p_rc); cleanup' EXIT
wait_for 60 grep -qs '^ready' proxy.out || fail "the throttling proxy did not start"
PPORT=$(sed -nE 's/^ready ([0-9]+)/\1/p' proxy.out)
export AWS_ENDPOINT_URL="http://127.0.0.1:$PPORT"
# 2.1 MB of state (32 files of 64 KiB), 4 files rewritten a second: 262 kB/s changing.
state=(--save-time 0.05 --step-time 0.01 --files 32 --file-bytes 65536 --changes-per-s 4
       --seconds 90)
# lead LOG EVERY MODE: one run, SIGTERM just before its next periodic checkpoint. --mtbf 10m
# puts Daly's interval near 9 s for a stall of ~65 ms (more on a loaded machine), over which
# every file changes (2.1 MB: 5 s at 400 kB/s), well past the 3 s lead: with --mtbf 2m it
# was near 4 s, whose 1 MB a quiet machine could just carry within the lead.
lead() {
	mkdir "$1" && cd "$1"
	export RESUME_RUN_STORE="s3://$S3_BUCKET/$1"
	"$RR_BIN" --log-format json --every "$2" --mtbf 10m --grace 3 --max-overhead 20 \
		-- "$PY" "$T" "${state[@]}" > "../$1.log" 2>&1 &
	local agent=$!
	tau=$("$PY" "$RR_SRC/tests/integration/notice_before_ask.py" "../$1.log" $agent "$3") ||
		fail "$1: $tau"
	set +e
	wait $agent
	RC=$?
	set -e
	cd ..
	msgs "$1.log" > "$1.txt"
}
lead auto auto auto
expect_eq "$RC" "$RR_PREEMPTED" "the auto run's exit status"
expect_grep '^every auto: a checkpoint every [0-9.]+ s: the notice-lead rule \(a notice.s checkpoint must be durable within the 3.00 s lead: at most [0-9.]+ kB changed, at [0-9.]+ kB/s\); Daly.s interval would be [0-9.]+ s' \
	auto.txt "the rule shortened the interval"
daly_s=$(grep -E '^every auto: a checkpoint every [0-9.]+ s: the notice-lead rule' auto.txt | tail -n 1 |
	sed -nE 's/.*Daly.s interval would be ([0-9.]+) s.*/\1/p')
durable=$(grep -E '^checkpoint step-[0-9]+ is durable in the store: [0-9.]+ s after the notice, [0-9.]+ s before the deadline' auto.txt) ||
	fail "the notice's checkpoint was not durable within the lead: $(grep -E 'notice|deadline' auto.txt)"
expect_no_grep 'the notice-lead rule cannot be met' auto.txt "no impossibility claimed"
ok "notice-lead rule: every $tau s instead of Daly's $daly_s s; a notice just before the next checkpoint: ${durable#checkpoint }"

# The same moment with Daly's interval as a fixed one: the increment does not fit.
daly_ms=$("$PY" -c "print(round($daly_s * 1000))")
lead fixed "${daly_ms}ms" "$("$PY" -c "print($daly_ms / 1000)")"
expect_eq "$RC" "$RR_PREEMPTED" "the fixed run's exit status"
expect_grep '^deadline passed with the persist unfinished' fixed.txt \
	"Daly's interval, fixed, misses the lead"
ok "--every ${daly_ms}ms (Daly's) at the same moment: $(grep -E '^notice: deadline in 3 s' fixed.txt | sed -E 's/.*needs/needs/')"
finish
