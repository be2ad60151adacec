#!/usr/bin/env bash
# TLS end to end: the S3 and GCS test servers behind stunnel with certificates from a private
# CA made here. The drill runs over https on both and restores, with the CA trusted through
# AWS_CA_BUNDLE (S3) and SSL_CERT_FILE (GCS, and S3 without AWS_CA_BUNDLE). A certificate the
# agent cannot trust (an unknown CA, expired, another host's) is refused at start: exit 125,
# one line naming the certificate problem. There is no switch that turns verification off.
# The S3 server: s3rver, not SeaweedFS (tests/integration/s3lib.sh): s3rver's log shows the objects that came through the TLS terminator, and our GCS front stores into it.
S3_SERVER=s3rver
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/gcslib.sh"
. "$RR_SRC/tests/integration/tlslib.sh"

command -v stunnel4 > /dev/null || fail "stunnel4 is missing (scripts/install-deps.sh test)"
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 't_rc=$?; stop_gcs; stop_stunnel; stop_s3; cleanup $t_rc' EXIT
start_s3

make_ca trusted
make_ca unknown
make_cert good trusted "IP:127.0.0.1,DNS:localhost"
make_cert stranger unknown "IP:127.0.0.1,DNS:localhost"
make_cert wronghost trusted "DNS:storage.example.com"
make_expired_cert expired trusted
S3_TLS=$(tls_service s3 good "$S3_PORT")
# A service-account key whose token_uri is the GCS test server's, through the terminator.
GCS_TLS=$(free_port)
gcs_key sa.json "https://127.0.0.1:$GCS_TLS/token"
start_gcs gcs.log --key-file sa.json --token-url "https://127.0.0.1:$GCS_TLS/token"
tls_service gcs good "$GPORT" "$GCS_TLS" > /dev/null
UNKNOWN_TLS=$(tls_service unknown-ca stranger "$S3_PORT")
WRONGHOST_TLS=$(tls_service wrong-host wronghost "$S3_PORT")
EXPIRED_TLS=$(tls_service expired expired "$S3_PORT")

start_stunnel "$S3_TLS" "$GCS_TLS" "$UNKNOWN_TLS" "$WRONGHOST_TLS" "$EXPIRED_TLS"

# The terminators really speak TLS with the certificates meant (checked with another client).
curl -fsS --cacert "$TLS_DIR/trusted.pem" -o /dev/null "https://127.0.0.1:$S3_TLS/" 2>curl.err ||
	grep -q 'returned error' curl.err || fail "curl cannot reach s3 over TLS: $(cat curl.err)"
curl -sS --cacert "$TLS_DIR/trusted.pem" -o /dev/null "https://127.0.0.1:$UNKNOWN_TLS/" 2>curl.err &&
	fail "curl trusted the unknown CA's certificate"
ok "stunnel terminates TLS for S3 on :$S3_TLS and GCS on :$GCS_TLS with the private CA's certificate"

s3_env
unset SSL_CERT_FILE
STEPS=300
reference_run $STEPS ref.json

# drill STORE TAG: a notice during training, the checkpoint durable before exit, then a new
# machine restores it and ends bit-identical to an uninterrupted run.
drill() {
	local store=$1 tag=$2 saved
	rm -rf .resume-run NOTICE
	( wait_for 30 test -d .resume-run/checkpoints/step-50 && touch NOTICE ) &
	local notice_pid=$!
	run_rr "$tag-m1.log" --store "$store" --precision exact --drill-file NOTICE -- \
		"$PY" "$TRAINER" --steps $STEPS --step-time 0.01 --out "$tag-m1.json"
	wait $notice_pid
	expect_eq "$RC" "${RR_PREEMPTED:-0}" "$tag machine 1 exit status"
	expect_grep 'checkpoint step-[0-9]+ is durable in the store' "$tag-m1.log" "$tag durable before exit"
	saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' "$tag-m1.log")
	[ -n "$saved" ] || fail "$tag: trainer did not checkpoint on the notice"
	rm -rf .resume-run NOTICE
	run_rr "$tag-m2.log" --store "$store" --precision exact -- \
		"$PY" "$TRAINER" --steps $STEPS --step-time 0 --out "$tag-m2.json"
	expect_eq "$RC" 0 "$tag machine 2 exit status"
	expect_grep "restored step-$saved" "$tag-m2.log" "$tag restore"
	expect_eq "$(json_field "$tag-m2.json" sha256)" "$(json_field ref.json sha256)" "$tag final weights"
	DRILL_SAVED=$saved
}

# --- S3 over https, the CA from AWS_CA_BUNDLE ---
export AWS_ENDPOINT_URL="https://127.0.0.1:$S3_TLS" AWS_CA_BUNDLE="$TLS_DIR/trusted.pem"
before=$(grep -c 'Stored object' "$W/s3rver.log" || true)
drill "s3://$S3_BUCKET/tls" s3
after=$(grep -c 'Stored object' "$W/s3rver.log" || true)
[ "$after" -gt "$before" ] || fail "no object reached s3rver through the terminator"
grep -q "Service \\[s3\\] accepted connection from 127.0.0.1" "$W/stunnel.log" || fail "stunnel saw no S3 connection"
ok "S3 over https (AWS_CA_BUNDLE): step-$DRILL_SAVED durable at the notice, restored bit-identical"

# --- the same store with the CA from SSL_CERT_FILE instead ---
unset AWS_CA_BUNDLE
SSL_CERT_FILE="$TLS_DIR/trusted.pem" run_rr s3-sslcert.log ls --store "s3://$S3_BUCKET/tls"
expect_eq "$RC" 0 "ls over https with SSL_CERT_FILE: $(cat s3-sslcert.log)"
expect_grep '^\* step-' s3-sslcert.log "ls over https with SSL_CERT_FILE"
ok "S3 over https trusts the CA from SSL_CERT_FILE when AWS_CA_BUNDLE is unset"

# --- GCS over https (token exchange included), the CA from SSL_CERT_FILE ---
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_ENDPOINT_URL
	export STORAGE_EMULATOR_HOST="https://127.0.0.1:$GCS_TLS" GOOGLE_APPLICATION_CREDENTIALS="$W/sa.json"
	export SSL_CERT_FILE="$TLS_DIR/trusted.pem"
	drill "gs://$S3_BUCKET/gtls" gcs
	echo "$DRILL_SAVED" > gcs-saved
)
grep -q 'POST /token -> 200' gcs.log || fail "no token exchange over https: $(tail -5 gcs.log)"
grep -q "Service \\[gcs\\] accepted connection from 127.0.0.1" "$W/stunnel.log" || fail "stunnel saw no GCS connection"
ok "GCS over https (SSL_CERT_FILE, JWT exchanged at an https token_uri): step-$(cat gcs-saved) durable and restored"

# --- certificates the agent must refuse, at start, with one line naming the problem ---
# refused NAME PORT PATTERN [ENV...]: a run against https://127.0.0.1:PORT ends at once with
# 125 and one line matching PATTERN; the trainer never starts.
refused() {
	local name=$1 port=$2 pattern=$3 start=$SECONDS
	shift 3
	rm -f started
	env "$@" AWS_ENDPOINT_URL="https://127.0.0.1:$port" "$RR_BIN" --store "s3://$S3_BUCKET/tls" \
		-- touch started > "$name.log" 2>&1 && RC=0 || RC=$?
	expect_eq "$RC" 125 "$name: exit status"
	expect_grep "$pattern" "$name.log" "$name: the certificate problem is named"
	[ "$(grep -c . "$name.log")" -eq 1 ] || fail "$name: not one line: $(cat "$name.log")"
	[ ! -e started ] || fail "$name: the trainer ran on an untrusted store"
	[ $((SECONDS - start)) -le 10 ] || fail "$name: took $((SECONDS - start)) s to refuse"
	ok "$name refused at start (exit 125): $(head -c 200 "$name.log")"
}
refused unknown-ca "$UNKNOWN_TLS" 'SSL certificate problem: unable to get local issuer certificate' \
	AWS_CA_BUNDLE="$TLS_DIR/trusted.pem"
refused no-private-ca "$S3_TLS" 'SSL certificate problem: (unable to get local issuer|self.signed)' \
	-u AWS_CA_BUNDLE -u SSL_CERT_FILE
refused expired "$EXPIRED_TLS" 'SSL certificate problem: certificate has expired' \
	AWS_CA_BUNDLE="$TLS_DIR/trusted.pem"
refused wrong-host "$WRONGHOST_TLS" "subject name .*does not match|no alternative certificate subject name matches target host name '127.0.0.1'" \
	AWS_CA_BUNDLE="$TLS_DIR/trusted.pem"
refused ca-file-missing "$S3_TLS" 'certificate' AWS_CA_BUNDLE="$W/no-such-ca.pem"

# GCS with the system's CAs only: the token exchange and the store refuse the private CA.
env -u SSL_CERT_FILE -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY STORAGE_EMULATOR_HOST="https://127.0.0.1:$GCS_TLS" \
	GOOGLE_APPLICATION_CREDENTIALS="$W/sa.json" "$RR_BIN" --store "gs://$S3_BUCKET/gtls" -- touch started \
	> gcs-untrusted.log 2>&1 && RC=0 || RC=$?
expect_eq "$RC" 125 "gcs untrusted: exit status"
expect_grep 'SSL certificate problem' gcs-untrusted.log "gcs untrusted: the certificate problem is named"
[ "$(grep -c . gcs-untrusted.log)" -eq 1 ] || fail "gcs untrusted: not one line: $(cat gcs-untrusted.log)"
[ ! -e started ] || fail "gcs untrusted: the trainer ran"
ok "GCS without the private CA refused at start: $(head -c 200 gcs-untrusted.log)"

# --- no switch turns verification off ---
"$RR_BIN" --help > help.out 2>&1 || true
expect_no_grep 'insecure|no-verify|verify-ssl|skip-tls|no-check-cert|tls-verify|ssl-verify' help.out \
	"--help offers no way to turn TLS verification off"
for opt in --insecure --no-verify-ssl -k; do
	env AWS_ENDPOINT_URL="https://127.0.0.1:$UNKNOWN_TLS" "$RR_BIN" $opt --store "s3://$S3_BUCKET/tls" \
		-- touch started > opt.log 2>&1 && fail "$opt was accepted: $(cat opt.log)"
	[ ! -e started ] || fail "$opt: the trainer ran"
done
# Variables other TLS clients read to relax checks change nothing here.
refused relax-env "$UNKNOWN_TLS" 'SSL certificate problem' AWS_CA_BUNDLE="$TLS_DIR/trusted.pem" \
	CURL_CA_BUNDLE= PYTHONHTTPSVERIFY=0 NODE_TLS_REJECT_UNAUTHORIZED=0 GIT_SSL_NO_VERIFY=1 \
	AWS_S3_VERIFY=false
# The source sets peer and host verification on, once each, and never off.
vp=$(grep -rhoE 'CURLOPT_SSL_VERIFY(PEER|HOST)[^;]*' "$RR_SRC/storage" "$RR_SRC/cloud" "$RR_SRC/agent" | sort | uniq -c)
expect_eq "$(echo "$vp" | awk '{print $2, $3}' | paste -sd' ')" "CURLOPT_SSL_VERIFYHOST, 2L) CURLOPT_SSL_VERIFYPEER, 1L)" \
	"TLS verification in the source"
ok "no option or variable turns verification off (--insecure/-k/--no-verify-ssl refused; source sets VERIFYPEER=1, VERIFYHOST=2 only)"
finish
