#!/usr/bin/env bash
# Secrets never leave the agent: every store scenario runs with distinctive secrets (an S3
# secret key and session token, container credentials and the container's authorization
# token, a GCS service-account private key, the bearer tokens of the metadata server and of
# the token endpoint), debug logging on, and then every byte the agent left behind is
# searched for them: stdout/stderr of every run, the ledger and every other object in the
# store, the notice file, the checkpoint and staging directories, and the command lines of
# the agent and its trainer read while they ran. The search itself is checked first: it
# must find each secret in a file that holds it on purpose.
# The S3 server: s3rver, not SeaweedFS (tests/integration/s3lib.sh): s3rver takes the test's own distinctive key pairs (RR_S3RVER_KEYS), and our GCS front stores into it.
S3_SERVER=s3rver
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/gcslib.sh"

# Inputs that hold secrets on purpose live here and are not searched.
IN="$W/inputs"
mkdir -p "$IN"
AKID=AKIDRRSECRETSTEST1
SECRET=rrS3cretKey0Qz7xVb9Lm3Np5Rt8Wy2Hk4Jd6Fg1
SESSION=rrSessi0nT0ken9Zp8Wn7Vm6Lk5Jh4Gf3Ds2Aa1Xq
C_AKID=AKIDRRSECRETSTEST2
C_SECRET=rrC0ntainerSecret5Tg7Yh9Uj1Ik3Ol5Pz7Xc9Vb
C_SESSION=rrC0ntainerSessi0n2Wq4Er6Ty8Ui0Op2As4Df6Gh
C_AUTH=rrC0ntainerAuth7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui
BEARER=ya29.rrMetadataBearer4Hj6Kl8Zx0Cv2Bn4Mq6Wr
export RR_S3RVER_KEYS="$AKID:$SECRET,$C_AKID:$C_SECRET"
start_s3

# A service-account key for the GCS test server; its private key's base64 body is searched
# for by a slice from its middle (a 64-character line).
gcs_key "$IN/sa.json"
KEY_SLICE=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["private_key"].splitlines()[10])' "$IN/sa.json")
[ ${#KEY_SLICE} -eq 64 ] || fail "no 64-character line in the private key"
RR_TEST_GCP_TOKEN=$BEARER "$PY" "$RR_SRC/tests/metadata/server.py" --cloud gcp --port 0 \
	--control-port 0 > meta.out 2> "$IN/meta.log" &
META_PID=$!
# The container credentials endpoint, which wants C_AUTH.
CPORT=$(free_port)
"$PY" - "$CPORT" "$C_AUTH" "$C_AKID" "$C_SECRET" "$C_SESSION" > creds.out 2> "$IN/creds.log" <<'PY' &
import http.server, json, sys, datetime
port, auth, akid, secret, token = sys.argv[1:]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.headers.get("Authorization") != auth:
            self.send_response(403); self.end_headers(); return
        exp = (datetime.datetime.utcnow() + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = json.dumps({"AccessKeyId": akid, "SecretAccessKey": secret, "Token": token,
                           "Expiration": exp}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
        print("served", flush=True)
    def log_message(self, *a): pass
print("ready", flush=True)
http.server.HTTPServer(("127.0.0.1", int(port)), H).serve_forever()
PY
CREDS_PID=$!
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 's_rc=$?; stop_gcs; kill $META_PID $CREDS_PID 2>/dev/null; stop_s3; cleanup $s_rc' EXIT
start_gcs "$IN/gcs.log" --key-file "$IN/sa.json" --accept-token "$BEARER"
wait_for 60 grep -q '^ready' meta.out || fail "the metadata test server did not start"
wait_for 60 grep -q '^ready' creds.out || fail "the container credentials server did not start"
MPORT=$(sed -nE 's/^ready ([0-9]+)/\1/p' meta.out)
printf '%s' "$C_AUTH" > "$IN/container-token"

NAMES=(secret-key session-token container-secret container-session container-auth
       metadata-bearer private-key issued-token)
PATTERNS=("$SECRET" "$SESSION" "$C_SECRET" "$C_SESSION" "$C_AUTH" "$BEARER" "$KEY_SLICE"
	  'ya29\.test-[A-Za-z0-9_-]{16}')
# leaks PATH...: one line "<file>: <secret name>" for each secret found in each file under
# PATH (binary files too), the inputs and the S3 test server's own log excepted. The issued-token pattern matches any token
# the GCS test server hands out ("ya29.test-" and its random part).
leaks() {
	local i
	for i in "${!NAMES[@]}"; do
		if [ "${NAMES[$i]}" = issued-token ]; then
			grep -rlaE --exclude-dir=inputs --exclude=s3rver.log -- "${PATTERNS[$i]}" "$@" || true
		else
			grep -rlaF --exclude-dir=inputs --exclude=s3rver.log -- "${PATTERNS[$i]}" "$@" || true
		fi | sed "s|\$|: ${NAMES[$i]}|"
	done
}

# --- the search finds what is there ---
mkdir -p canary
for i in "${!NAMES[@]}"; do
	case ${NAMES[$i]} in
	issued-token) echo "Authorization: Bearer ya29.test-AbCdEfGhIjKlMnOpQrStUv" ;;
	*) printf 'prefix %s suffix\n' "${PATTERNS[$i]}" ;;
	esac > "canary/${NAMES[$i]}.txt"
done
printf '\0binary\0%s\0' "$SECRET" > canary/binary.bin
found=$(leaks canary | sort)
for n in "${NAMES[@]}"; do
	grep -qx "canary/$n.txt: $n" <<< "$found" || fail "the search misses the $n in a file that holds it: $found"
done
grep -qx "canary/binary.bin: secret-key" <<< "$found" || fail "the search misses a secret in a binary file"
[ "$(wc -l <<< "$found")" -eq $((${#NAMES[@]} + 1)) ] || fail "the search reports what is not there: $found"
rm -rf canary
ok "the search finds each of the ${#NAMES[@]} secrets (and in binary files), and nothing else"

# run_watched LOG ARGS...: runs the agent with ARGS, output to LOG; while it runs, saves the
# command lines of it and its children into seen/ (searched later), and its pid in
# seen/LOG.pid. Sets RC.
run_watched() {
	local log=$1 pid p c n=0
	shift
	mkdir -p seen
	"$RR_BIN" "$@" > "$log" 2>&1 &
	pid=$!
	echo $pid > "seen/$log.pid"
	while kill -0 $pid 2>/dev/null; do
		for p in $pid $(pgrep -P $pid || true); do
			c=$(tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline") || c=
			[ -z "$c" ] || { printf '%s\n' "$c" > "seen/$log.cmdline.$p"; n=$((n + 1)); }
		done
		sleep 0.05
	done
	wait $pid && RC=0 || RC=$?
	WATCHED=$n
}

# notice_seen LOG: touches NOTICE with the trainer of the agent run_watched LOG started held
# (SIGSTOP), copies the notice file the agent writes for it into seen/LOG.notice.json, then
# lets the trainer go on. Held, because a trainer that checkpoints at once lets the agent
# persist, exit and remove the file in less time than a poll would take to see it.
notice_seen() {
	local log=$1 trainer
	trainer=$(pgrep -P "$(cat "seen/$log.pid")") || return 1
	kill -STOP "$trainer"
	touch NOTICE
	wait_for 30 cp .resume-run/checkpoints/.resume-run-notice.json "seen/$log.notice.json" \
		2>/dev/null || true
	kill -CONT "$trainer"
}

# drill TAG: a notice while training, the checkpoint durable before exit; a new machine
# restores it; then ls, verify, restore and gc read the store. All with -v.
drill() {
	local tag=$1 saved
	rm -rf .resume-run NOTICE
	( wait_for 30 test -d .resume-run/checkpoints/step-50 && ${BEFORE_NOTICE:-true} && notice_seen "$tag-m1.log" ) &
	local notice_pid=$!
	run_watched "$tag-m1.log" -v --precision exact --drill-file NOTICE -- \
		"$PY" "$TRAINER" --steps 200 --step-time 0.01 --out "$tag-m1.json"
	wait $notice_pid
	expect_eq "$RC" "${RR_PREEMPTED:-0}" "$tag machine 1 exit status"
	expect_grep 'checkpoint step-[0-9]+ is durable in the store' "$tag-m1.log" "$tag durable"
	[ "$WATCHED" -ge 2 ] || fail "$tag: the command lines were not read while the agent ran"
	grep -qa 'resume-run' seen/"$tag"-m1.log.cmdline.* || fail "$tag: no agent command line read"
	ls seen/"$tag"-m1.log.notice.json > /dev/null 2>&1 || fail "$tag: the notice file was not seen"
	saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' "$tag-m1.log")
	rm -rf .resume-run NOTICE
	run_watched "$tag-m2.log" -v --precision exact -- "$PY" "$TRAINER" --steps 200 --step-time 0 --out "$tag-m2.json"
	expect_eq "$RC" 0 "$tag machine 2 exit status"
	expect_grep "restored step-$saved" "$tag-m2.log" "$tag restore"
	run_rr "$tag-ls.log" ls -v
	expect_eq "$RC" 0 "$tag ls"
	run_rr "$tag-verify.log" verify -v
	expect_eq "$RC" 0 "$tag verify"
	run_rr "$tag-restore.log" restore -v --to "$tag-restored"
	expect_eq "$RC" 0 "$tag restore"
	run_rr "$tag-gc.log" gc -v
	expect_eq "$RC" 0 "$tag gc"
	run_rr "$tag-json.log" ls -v --log-format json
	expect_eq "$RC" 0 "$tag ls (json logs)"
	DRILL_SAVED=$saved
}

# --- S3: static keys with a session token; the full drill ---
s3_env
export AWS_ACCESS_KEY_ID=$AKID AWS_SECRET_ACCESS_KEY=$SECRET AWS_SESSION_TOKEN=$SESSION
export RESUME_RUN_STORE="s3://$S3_BUCKET/static"
drill s3-static
ok "S3 with a secret key and session token: drill (step-$DRILL_SAVED), restore, ls, verify, gc"
# Failures print what S3 said, never what was signed with.
AWS_SECRET_ACCESS_KEY="${SECRET}x" run_rr s3-wrong-secret.log ls -v
expect_eq "$RC" 125 "a wrong secret (the right one with a character more)"
expect_grep 'SignatureDoesNotMatch' s3-wrong-secret.log "the wrong secret is named as such"
ok "S3 with a wrong secret: exit 125 naming SignatureDoesNotMatch"

# --- S3: container credentials (authorization token from a file, then from a variable) ---
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN
	export AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$CPORT/v2/credentials/x"
	export AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$IN/container-token"
	export RESUME_RUN_STORE="s3://$S3_BUCKET/container"
	drill s3-container
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="" AWS_CONTAINER_AUTHORIZATION_TOKEN=$C_AUTH \
		run_rr s3-container-env.log ls -v
	expect_eq "$RC" 0 "ls with the container token from a variable"
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="" AWS_CONTAINER_AUTHORIZATION_TOKEN="${C_AUTH}x" \
		run_rr s3-container-refused.log ls -v
	expect_eq "$RC" 125 "a container token the endpoint refuses"
)
[ "$(grep -c served creds.out)" -ge 3 ] || fail "the container endpoint was not asked"
ok "S3 with container credentials: drill, restore, ls; a refused authorization token"

# --- GCS: a service-account key (JWT exchanged for a token), the full drill ---
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_ENDPOINT_URL
	export STORAGE_EMULATOR_HOST="127.0.0.1:$GPORT" GOOGLE_APPLICATION_CREDENTIALS="$IN/sa.json"
	export RESUME_RUN_STORE="gs://$S3_BUCKET/gcs-key"
	# The tokens are revoked mid-run: the notice's persist is refused once and refreshes.
	BEFORE_NOTICE="curl -fsS -o /dev/null -X POST http://127.0.0.1:$GPORT/_test/expire-tokens"
	drill gcs-key
	refused=$(curl -fsS "http://127.0.0.1:$GPORT/_test/state" |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["unauthorized"])')
	[ "$refused" -ge 1 ] || fail "the revoked token was never refused, so no refresh happened"
)
grep -q 'POST /token -> 200' "$IN/gcs.log" || fail "no token was issued for the key"
ok "GCS with a service-account key: drill (a token revoked and refreshed mid-run), restore, ls, verify, gc"

# --- GCS: the metadata server's bearer token ---
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_ENDPOINT_URL GOOGLE_APPLICATION_CREDENTIALS
	export STORAGE_EMULATOR_HOST="127.0.0.1:$GPORT" GCE_METADATA_HOST="127.0.0.1:$MPORT"
	export RESUME_RUN_STORE="gs://$S3_BUCKET/gcs-meta"
	drill gcs-meta
)
grep -q 'service-accounts/default/token' "$IN/meta.log" || fail "the metadata token was not fetched"
ok "GCS with the metadata server's bearer token: drill, restore, ls, verify, gc"

# --- the search, over everything the runs left ---
[ -n "$(find s3data -type f -path '*events*' | head -n 1)" ] || fail "no ledger object in the store"
nobj=$(find s3data -type f | wc -l)
nlogs=$(ls ./*.log | wc -l)
found=$(leaks "$W")
[ -z "$found" ] || fail "secrets found: $found"
ok "no secret in $nlogs agent logs, $nobj store files (objects, ledger events), notice files, checkpoints or $(ls seen | grep -c cmdline) command lines"
finish
