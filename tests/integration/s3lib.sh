# S3 test server helpers, sourced after lib.sh: a real S3 server on 127.0.0.1 and the AWS
# variables that point the agent and the AWS CLI at it. S3_SERVER (set before sourcing)
# picks the server:
#   seaweedfs  (default) SeaweedFS, a server others maintain
#              (tests/integration/seaweedfslib.sh);
#   s3rver     @20minutes/s3rver 5.0.0 with our conditional-write plug-in (tests/s3/): its
#              objects are plain files under $S3_DIR, which the tests that look into or age
#              objects on disk, or put our GCS front and fault proxy in front of it, rely
#              on. Both verify SigV4 signatures.
S3_SERVER=${S3_SERVER:-seaweedfs}
S3_BUCKET=ckpt
S3_DIR="$W/s3data"
S3_PID=
case $S3_SERVER in
seaweedfs) . "$RR_SRC/tests/integration/seaweedfslib.sh"; S3_LOG="$W/seaweedfs.log" ;;
s3rver) S3_AKID=S3RVER S3_SECRET=S3RVER S3_LOG="$W/s3rver.log" ;; # its built-in account
*) echo "S3_SERVER=$S3_SERVER: seaweedfs or s3rver" >&2; exit 2 ;;
esac

# s3_serve: starts the server on $S3_PORT over $S3_DIR (again, after a stop: same data).
s3_serve() {
	if [ "$S3_SERVER" = seaweedfs ]; then
		start_seaweedfs "$S3_PORT" "$S3_DIR" "$S3_LOG"
		return
	fi
	local started
	"$RR_SRC/tests/s3/install-s3rver.sh"
	mkdir -p "$S3_DIR"
	started=$(grep -c '^ready' "$S3_LOG" 2>/dev/null || true)
	S3RVER_VERBOSE=1 node --openssl-legacy-provider "$RR_SRC/tests/s3/s3rver.js" "$S3_PORT" \
		"$S3_DIR" "$S3_BUCKET" >> "$S3_LOG" 2>&1 &
	S3_PID=$!
	wait_for 60 s3_ready_after "${started:-0}" || fail "the S3 test server did not start: $(tail -n 5 "$S3_LOG")"
}
s3_ready_after() { [ "$(grep -c '^ready' "$S3_LOG" || true)" -gt "$1" ]; }

# start_s3 [PORT]: starts the server (on PORT, or a free one) with the bucket $S3_BUCKET.
start_s3() {
	S3_PORT=${1:-${S3_PORT:-$(free_port)}}
	: > "$S3_LOG"
	s3_serve
	[ "$S3_SERVER" != seaweedfs ] || seaweedfs_mb "$S3_BUCKET"
}

# stop_s3 [SIGNAL]: stops the server (SIGKILL: at once, as in a crash).
stop_s3() {
	[ -n "$S3_PID" ] || return 0
	kill "-${1:-TERM}" "$S3_PID" 2>/dev/null || true
	wait "$S3_PID" 2>/dev/null || true
	# A server restarted in a subshell is no child of this shell, and wait returns at once:
	# until it is gone it may still write under $S3_DIR (SeaweedFS flushes for about 1 s).
	wait_for 30 s3_gone "$S3_PID" || true
	S3_PID=
}
s3_gone() { ! kill -0 "$1" 2>/dev/null; }

s3_env() {
	# Only what the test sets: nothing from the machine's ~/.aws or environment.
	unset AWS_PROFILE AWS_SESSION_TOKEN AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN \
	      AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI \
	      AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE \
	      AWS_ENDPOINT_URL_S3 AWS_DEFAULT_REGION AWS_CA_BUNDLE
	export HOME="$W/home" AWS_EC2_METADATA_DISABLED=true
	mkdir -p "$HOME"
	export AWS_ACCESS_KEY_ID=$S3_AKID AWS_SECRET_ACCESS_KEY=$S3_SECRET AWS_REGION=us-east-1
	export AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
	export AWS_PAGER=""
}

# Debian's AWS CLI (not whatever else is first on PATH) at the test server; awscli 2.9
# predates AWS_ENDPOINT_URL.
s3cli() { /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }

# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 's3_rc=$?; stop_s3; cleanup $s3_rc' EXIT
