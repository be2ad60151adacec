# S3 test server helpers, sourced after lib.sh: a real @20minutes/s3rver (it verifies SigV4
# signatures) on 127.0.0.1, and the AWS variables that point the agent and the AWS CLI at it.
S3_BUCKET=ckpt
S3_DIR="$W/s3data"
S3_PID=

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_s3 [PORT]: starts the server (on PORT, or a free one) and waits until it listens.
start_s3() {
	S3_PORT=${1:-${S3_PORT:-$(free_port)}}
	mkdir -p "$S3_DIR"
	: > "$W/s3rver.log"
	"$RR_SRC/tests/s3/install-s3rver.sh"
	S3RVER_VERBOSE=1 node --openssl-legacy-provider "$RR_SRC/tests/s3/s3rver.js" "$S3_PORT" "$S3_DIR" "$S3_BUCKET" > "$W/s3rver.log" 2>&1 &
	S3_PID=$!
	wait_for 20 grep -q '^ready' "$W/s3rver.log" || fail "the S3 test server did not start"
}

stop_s3() {
	[ -n "$S3_PID" ] || return 0
	kill "$S3_PID" 2>/dev/null || true
	wait "$S3_PID" 2>/dev/null || true
	S3_PID=
}

s3_env() {
	# Only what the test sets: nothing from the machine's ~/.aws or environment.
	unset AWS_PROFILE AWS_SESSION_TOKEN AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN \
	      AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI \
	      AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE \
	      AWS_ENDPOINT_URL_S3 AWS_DEFAULT_REGION AWS_CA_BUNDLE
	export HOME="$W/home" AWS_EC2_METADATA_DISABLED=true
	mkdir -p "$HOME"
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
	export AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
	export AWS_PAGER=""
}

# Debian's AWS CLI (not whatever else is first on PATH) at the test server; awscli 2.9
# predates AWS_ENDPOINT_URL.
s3cli() { /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }

# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 's3_rc=$?; stop_s3; (exit $s3_rc); cleanup' EXIT
