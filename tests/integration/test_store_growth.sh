#!/usr/bin/env bash
# A run's store over many machines (S3 test server behind the fault proxy): a replacement
# machine's start-up reads what the newest checkpoint needs, not every manifest; retention
# catches up on every machine, in the background, and never holds the exit up; a manifest
# that an aborted upload left empty is passed over at once (no retrying a completed answer),
# while a store that refuses to answer stops the start with its own reason.
. "$(dirname "$0")/lib.sh"
# s3rver: the fault proxy is built around it, and it keeps a truncated PUT (section 4).
S3_SERVER=s3rver
. "$RR_SRC/tests/integration/s3lib.sh"
start_s3
s3_env
. "$RR_SRC/tests/integration/faultlib.sh"
start_faults
T="$RR_SRC/tests/integration/trainers/ticker.py"
export RESUME_RUN_STORE="s3://$S3_BUCKET/grow"

committed() { "$RR_BIN" ls 2>&1 | grep -cE ' (committed|proven) ' || true; }
# proxy_gets PATTERN: how many GETs the proxy saw whose path matches PATTERN.
proxy_gets() {
	curl -fsS "$FAULT_CTL/log" | "$PY" -c '
import json, re, sys
print(sum(1 for e in json.load(sys.stdin) if e["method"] == "GET" and re.search(sys.argv[1], e["path"])))' "$1"
}
# since LOG PATTERN: seconds from the first JSON log line of LOG matching PATTERN to now.
since() {
	"$PY" - "$@" <<'PYEOF'
import json, re, sys, time
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if re.search(sys.argv[2], d["msg"]):
        print("%.2f" % (time.time() - d["ts"]))
        break
PYEOF
}

# --- A run of up to 30 checkpoints, all kept.
for m in 1 2 3; do
	run_rr fill$m.log --keep 100 -- "$PY" "$T" --every 0.15 --until $((10 * m))
	expect_eq "$RC" 0 "filling machine $m: exit status"
	rm -rf .resume-run/checkpoints
done
# The agent persists the newest checkpoint waiting and passes over the ones it replaced, so
# a loaded machine commits fewer of the 30 (11 were seen beside eight other tests); ten are
# enough for what follows (a start-up that reads two manifests of n).
n=$(committed)
[ "$n" -ge 10 ] || fail "expected at least 10 committed checkpoints, got $n"

# --- 1. A replacement machine reads the newest manifest, not all of them.
curl -fsS -X DELETE "$FAULT_CTL/log" > /dev/null
run_rr start.log --keep 100 -- "$PY" "$T" --until 0
expect_eq "$RC" 0 "replacement machine: exit status"
expect_grep 'restored step-30: ' start.log "the replacement machine restored step-30"
reads=$(proxy_gets '/checkpoints/[^/]+/manifest\.json$')
[ "$reads" -le 2 ] || fail "start-up read $reads manifests of $n checkpoints (expected at most 2)"
expect_no_grep 'step-30 committed' start.log "the restored checkpoint is not reported as committed"
ok "a replacement machine over $n checkpoints read $reads manifest(s)"

# --- 2. Retention catches up on a machine that commits nothing: in the background, while
# its trainer runs.
rm -rf .resume-run/checkpoints
run_rr catchup.log --keep 3 -- sh -c 'sleep 4'
expect_eq "$RC" 0 "catching-up machine: exit status"
expect_grep 'retention: deleted [0-9]+ checkpoints, step-[0-9]+ to step-[0-9]+' catchup.log \
	"retention at start deleted the old checkpoints"
# The newest three, and the newest proven one (machine 3 resumed from step-20 and went on).
expect_eq "$(committed)" 4 "committed checkpoints after a machine that only caught up"
"$RR_BIN" ls 2>&1 | grep -qE ' step-20 +proven ' || fail "the newest proven, step-20, was not kept"
ok "retention caught up at start on a machine that committed nothing: 3 kept of $n, and the newest proven"

# --- 3. Retention never holds the exit up: with every delete held 30 s by the store, a
# machine whose trainer commits once and exits leaves within seconds, and what its
# retention did not finish, the next machine does.
run_rr refill.log --keep 100 -- "$PY" "$T" --every 0.05 --until 45
fault '{"method":"DELETE","action":"stall","seconds":30}'
fault '{"method":"POST","query":"delete","action":"stall","seconds":30}'
rm -rf .resume-run/checkpoints
run_rr exit.log --keep 3 --log-format json -- "$PY" "$T" --every 0.05 --until 46
took=$(since exit.log '^trainer exited')
no_faults
expect_eq "$RC" 0 "machine with a slow store's deletes: exit status"
expect_grep 'persisted step-46' exit.log "the last checkpoint was persisted all the same"
"$PY" -c "import sys; sys.exit(0 if float('$took') < 10 else 1)" ||
	fail "the agent took $took s after its trainer exited (retention held the exit up)"
rm -rf .resume-run/checkpoints
run_rr next.log --keep 3 -- sh -c 'sleep 4'
expect_eq "$(committed)" 3 "committed checkpoints after the next machine"
"$RR_BIN" verify > verify.log 2>&1 || fail "verify after the interrupted retention: $(cat verify.log)"
ok "with deletes held 30 s, the agent stopped retention $took s after the trainer exited; the next machine finished it"

# --- 4. A manifest an aborted upload left empty (s3rver keeps a truncated PUT): ls and a
# new machine pass over it at once, saying why; ls used to retry it for over a minute.
run_rr more.log --keep 100 -- "$PY" "$T" --every 0.05 --until 47
s3d s3 cp --quiet "s3://$S3_BUCKET/grow/default/checkpoints/step-47/manifest.json" m47.json
s3d s3 rm --quiet "s3://$S3_BUCKET/grow/default/checkpoints/step-47/manifest.json"
"$PY" "$RR_SRC/tests/lib/partial_put.py" "$S3_DIRECT" "$S3_BUCKET" \
	grow/default/checkpoints/step-47/manifest.json m47.json 0
size=$(s3d s3api head-object --bucket "$S3_BUCKET" --key grow/default/checkpoints/step-47/manifest.json \
	--query ContentLength --output text)
expect_eq "$size" 0 "the aborted upload's object"
timeout 45 "$RR_BIN" ls > ls.log 2>&1 || fail "ls over an empty manifest: status $? ($(cat ls.log))"
expect_grep '^\* step-47 +INCOMPLETE .*manifest is empty \(0 bytes\)' ls.log "ls names the empty manifest"
rm -rf .resume-run/checkpoints
run_rr damaged.log --keep 100 -- "$PY" "$T" --until 0
expect_eq "$RC" 0 "machine over an empty manifest: exit status"
expect_grep 'checkpoint step-47 is not usable: manifest is empty \(0 bytes\)' damaged.log \
	"the new machine says why step-47 is passed over"
expect_grep 'restored step-46: ' damaged.log "the new machine restored step-46"
ok "an empty manifest (aborted upload) is passed over at once by ls and by a new machine"

# --- 5. Retries are for the store's transient errors, and said at the default level when
# they go on (a machine used to stay silent for minutes).
fault '{"method":"GET","path":"step-46/manifest.json","action":"error","status":503,"code":"SlowDown","times":2}'
rm -rf .resume-run/checkpoints
run_rr retried.log --keep 100 -- "$PY" "$T" --until 0
no_faults
expect_eq "$RC" 0 "machine whose store answered 503 twice: exit status"
expect_grep 'GET .*step-46/manifest.json: .*503 SlowDown.*; still retrying \(attempt 3 of 10\)' \
	retried.log "the retries are said"
expect_grep 'restored step-46: ' retried.log "restored step-46 after the retries"
ok "two 503s on the newest manifest: retried, said once at the default level, restored"

# --- 6. A store that answers the newest manifest with an error is no damage: the start
# stops with the store's reason (it used to fall back to an older checkpoint, as if the
# newer were damaged), and so does gc, instead of blaming unreadable manifests.
fault '{"method":"GET","path":"step-46/manifest.json","action":"error","status":403,"code":"AccessDenied","times":100}'
rm -rf .resume-run/checkpoints
run_rr denied.log --keep 100 -- "$PY" "$T" --until 0
expect_eq "$RC" 125 "machine whose store refuses the newest manifest: exit status"
expect_grep "cannot read the checkpoints of run 'default': .*403 AccessDenied" denied.log \
	"the start names the store's refusal"
expect_no_grep 'restored step-' denied.log "nothing older was restored instead"
run_rr gc.log gc --keep 3
expect_eq "$RC" 125 "gc when the store refuses a manifest: exit status"
expect_grep '403 AccessDenied' gc.log "gc names the store's refusal"
no_faults
ok "a manifest the store refuses to send stops the start (125) and gc with the store's reason"
finish
