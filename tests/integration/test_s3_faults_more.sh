#!/usr/bin/env bash
# The fault matrix, part 2 (the list of every case and where it is tested is at the top of
# test_s3_faults.sh): a stall past the timeouts, RequestTimeTooSkewed, a wrong region,
# ExpiredToken mid-run, the store's objects damaged or deleted behind the agent's back, disk
# full on restore. Every case ends with what the store holds checked: the newest checkpoint that
# should be there restores byte-identical, and nothing is called damaged that is not.
# The S3 server: s3rver, not SeaweedFS (tests/integration/s3lib.sh): fault injection through tests/faults/proxy.py, which is built around s3rver.
S3_SERVER=s3rver
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/faultlib.sh"

start_s3
s3_env
start_faults
export RESUME_RUN_CLOUD=none

# --- a stall past the stall timeout (20 s without a byte): the request is abandoned and
# sent again. 40 s: the 20 s count from when the body was sent, which on a loaded machine
# can be seconds into the hold (a 26 s hold once ended first, and the request succeeded);
# the test waits for the timeout, not for the hold. ---
fault '{"method": "PUT", "path": "/chunks/", "nth": 2, "action": "stall", "seconds": 40}'
start=$SECONDS
persist stall 1
n=$(fired)
no_faults
expect_eq "$n" 1 "stall: the stall happened"
expect_grep 'retrying in' stall.log "stall: the stalled request was sent again"
check_store stall "$W/ckpt-stall"
ok "stall of 40 s on a chunk PUT: abandoned after the stall timeout, sent again; persisted in $((SECONDS - start)) s, restores identical"

# --- RequestTimeTooSkewed: the proxy answers as a server whose clock is 20 minutes ahead;
# the agent signs with that time from then on, until a later answer says the server's clock
# is this machine's again. (s3rver 5.0.0 never refuses a skewed x-amz-date itself: its
# parseDate takes the compact form for a valid date.) ---
curl -fsS -X DELETE "$FAULT_CTL/log" > /dev/null
fault '{"method": "PUT", "path": "/chunks/", "nth": 1, "action": "skewed", "skew_seconds": 1200}'
fault '{"method": "PUT", "after": 4, "nth": 1, "action": "skewed", "skew_seconds": 0}'
persist skew 2
n=$(fired)
no_faults
expect_eq "$n" 2 "skew: both skew answers were given"
expect_grep "clock is off by 1200 s" skew.log "skew: the server's offset was taken"
expect_grep "signed with this machine's time again" skew.log "skew: and given back"
curl -fsS "$FAULT_CTL/log" > skew-requests.json
"$PY" - skew-requests.json <<'PY' || fail "skew: requests were not signed with the server's time"
import calendar, json, sys, time
log = json.load(open(sys.argv[1]))
t = lambda e: calendar.timegm(time.strptime(e["x-amz-date"], "%Y%m%dT%H%M%SZ"))
first, second = [k for k, e in enumerate(log) if e["action"] == "skewed"]
# the retry of the refused PUT went out signed 1200 s later than the refused one
again = next(e for e in log[first + 1:] if e["path"] == log[first]["path"])
assert abs(t(again) - t(log[first]) - 1200) <= 10, (log[first], again)
# the second refusal was of a request signed with the server's time too, and the retry of
# that one, like the last request, has this machine's time again
assert abs(t(log[second]) - t(log[first]) - 1200) <= 60, log[second]
again = next(e for e in log[second + 1:] if e["path"] == log[second]["path"])
assert abs(t(again) - t(log[first])) <= 60, again
assert abs(t(log[-1]) - time.time()) <= 60, log[-1]
PY
check_store skew "$W/ckpt-skew"
ok "RequestTimeTooSkewed: retried signed with the server's time (+1200 s), later back to this machine's; restores identical"

# --- a wrong region: the bucket is elsewhere; the start fails at once with one line naming
# the bucket's region, and nothing is written ---
for st in 301 400; do
	fault "{\"nth\": 1, \"action\": \"wrong_region\", \"region\": \"eu-west-3\", \"status\": $st}"
	run_rr region-$st.log --store "s3://$S3_BUCKET/region" --checkpoint-dir ckpt-region -- true
	no_faults
	expect_eq "$RC" 125 "wrong region ($st): agent status"
	expect_grep 'eu-west-3' region-$st.log "wrong region ($st): the bucket's region is named"
	expect_grep 'AWS_REGION' region-$st.log "wrong region ($st): what to set is named"
	[ "$(grep -c . region-$st.log)" -le 2 ] || fail "wrong region ($st): more than one line: $(cat region-$st.log)"
done
[ -z "$(s3d s3 ls --recursive "s3://$S3_BUCKET/region/")" ] || fail "wrong region: something was written"
ok "wrong region (301 PermanentRedirect, 400 AuthorizationHeaderMalformed): exit 125, one line: $(head -c 150 region-301.log)"

# --- expired credentials mid-run: credentials from a container endpoint; one PUT answered
# 400 ExpiredToken makes the agent fetch new ones and go on ---
CPORT=$(free_port)
"$PY" - "$CPORT" > creds-server.log 2>&1 <<'PY' &
import datetime, http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        exp = (datetime.datetime.utcnow() + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = json.dumps({"AccessKeyId": "S3RVER", "SecretAccessKey": "S3RVER",
                           "Token": "session-token", "Expiration": exp}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
        print("served", flush=True)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
CREDS_PID=$!
wait_for 10 "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $CPORT))" 2>/dev/null
fault '{"method": "PUT", "path": "/chunks/", "nth": 2, "action": "error", "status": 400, "code": "ExpiredToken"}'
trainer_script train-expired.sh "$W/ckpt-expired" 2
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$CPORT/creds" \
	"$RR_BIN" -v --store "s3://$S3_BUCKET/expired" --checkpoint-dir ckpt-expired -- ./train-expired.sh > expired.log 2>&1 ||
	fail "expired: agent failed: $(tail -n 5 expired.log)"
kill $CREDS_PID; wait $CREDS_PID 2>/dev/null || true
no_faults
expect_eq "$(fired)" 0 "expired: rules cleared"
expect_grep 'ExpiredToken' expired.log "expired: the expired token was seen"
[ "$(grep -c served creds-server.log)" -ge 2 ] || fail "expired: credentials were not fetched again"
expect_grep 'persisted step-2:' expired.log "expired: the last commit persisted"
check_store expired "$W/ckpt-expired"
ok "ExpiredToken mid-run: new credentials fetched ($(grep -c served creds-server.log) fetches), persist went on, restores identical"

# --- the store damaged behind the agent's back (a good run first) ---
persist damaged 3
check_store damaged "$W/ckpt-damaged"
base="s3://$S3_BUCKET/damaged/default"

# garbage LATEST: the newest manifest is still found by listing
s3d s3 cp "$base/LATEST" latest.good > /dev/null
printf '{"checkpoint":"step-3' > latest.cut
s3d s3 cp latest.cut "$base/LATEST" > /dev/null
run_rr latest-cut.log restore --store "s3://$S3_BUCKET/damaged" --to latest-cut
expect_eq "$RC" 0 "truncated LATEST: restore status"
diff -r latest-cut/step-3 ckpt-damaged/step-3 > /dev/null || fail "truncated LATEST: step-3 not restored identical"
run_rr latest-cut-verify.log verify --store "s3://$S3_BUCKET/damaged"
expect_no_grep 'step-[0-9]+: DAMAGED' latest-cut-verify.log "truncated LATEST: no checkpoint called damaged"
s3d s3 cp latest.good "$base/LATEST" > /dev/null
ok "truncated LATEST: restore still finds step-3 and restores it identical; no checkpoint called damaged"

# a truncated manifest of the newest: verify names it, restore falls back to step-2 loudly
s3d s3 cp "$base/checkpoints/step-3/manifest.json" manifest.good > /dev/null
head -c 100 manifest.good > manifest.cut
s3d s3 cp manifest.cut "$base/checkpoints/step-3/manifest.json" > /dev/null
run_rr manifest-verify.log verify --store "s3://$S3_BUCKET/damaged"
[ "$RC" -ne 0 ] || fail "truncated manifest: verify passed"
expect_grep '^step-3: (DAMAGED|INCOMPLETE).*manifest' manifest-verify.log "truncated manifest: step-3 named"
expect_grep '^step-2: ok' manifest-verify.log "truncated manifest: step-2 still ok"
run_rr manifest-restore.log restore --store "s3://$S3_BUCKET/damaged" --to manifest-cut
expect_eq "$RC" 0 "truncated manifest: restore falls back"
cat manifest-restore.log >&2; expect_grep 'step-3.*(DAMAGED|INCOMPLETE|rejected|not valid)' manifest-restore.log "truncated manifest: the fallback is loud"
diff -r manifest-cut/step-2 ckpt-damaged/step-2 > /dev/null || fail "truncated manifest: step-2 not restored identical"
[ ! -e manifest-cut/step-3 ] || fail "truncated manifest: a step-3 was restored"
s3d s3 cp manifest.good "$base/checkpoints/step-3/manifest.json" > /dev/null
ok "truncated manifest of step-3: verify names it INCOMPLETE (step-2 ok), restore falls back to step-2 loudly, identical"

# a chunk of step-3 deleted: verify names the chunk, restore falls back loudly
chunk=$("$PY" -c '
import json, sys
m = json.load(open(sys.argv[1]))
def shas(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "sha256" and isinstance(v, str) and len(v) == 64: yield v
            else: yield from shas(v)
    elif isinstance(o, list):
        for v in o: yield from shas(v)
print(sorted(set(shas(m)))[0])' manifest.good)
[ -n "$chunk" ] || fail "no chunk named in the manifest"
s3d s3 rm "$base/chunks/${chunk:0:2}/$chunk" > /dev/null
run_rr deleted-verify.log verify --store "s3://$S3_BUCKET/damaged"
[ "$RC" -ne 0 ] || fail "deleted chunk: verify passed"
expect_grep "^step-3: (DAMAGED|INCOMPLETE).*${chunk:0:12}.*missing" deleted-verify.log "deleted chunk: verify names the chunk"
expect_grep '^step-2: ok' deleted-verify.log "deleted chunk: step-2 still ok"
run_rr deleted-restore.log restore --store "s3://$S3_BUCKET/damaged" --to deleted
expect_eq "$RC" 0 "deleted chunk: restore falls back"
expect_grep "step-3 is (DAMAGED|not usable).*${chunk:0:12}" deleted-restore.log "deleted chunk: the fallback is loud"
diff -r deleted/step-2 ckpt-damaged/step-2 > /dev/null || fail "deleted chunk: step-2 not restored identical"
ok "chunk ${chunk:0:12}... of step-3 deleted: verify names it, restore falls back to step-2 loudly, identical"

# --- disk full on restore: a 500 KiB filesystem for the restore target ---
mkdir -p small
unshare --mount sh -c "mount -t tmpfs -o size=500k tmpfs small && \
	'$RR_BIN' restore --store s3://$S3_BUCKET/damaged --checkpoint step-2 --to $W/small/r > full.log 2>&1; \
	echo \$? > full-rc.txt; find small -type f | wc -l > full-files.txt" || fail "cannot mount a tmpfs (needs root)"
[ "$(cat full-rc.txt)" -ne 0 ] || fail "disk full on restore: restore reported success"
expect_grep 'no space left on device' full.log "disk full on restore: the cause is named"
# tmpfs: no blocks reserved per file (that zeroes every page first); one check of the
# whole restore against the free space, before any chunk is fetched.
expect_grep 'bytes needed, [0-9]+ free' full.log "disk full on restore: found before downloading"
expect_eq "$(cat full-files.txt)" 0 "disk full on restore: files left behind in the target"
ok "disk full on restore: fails with '$(grep -m1 -o '[^:]*no space left on device' full.log | head -c 80)', nothing half-restored left"

finish
