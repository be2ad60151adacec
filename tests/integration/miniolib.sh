# MinIO (github.com/minio/minio, built once from the Go module proxy into a cache outside the
# checkout by tests/thirdparty/install.sh), sourced by s3lib.sh when S3_SERVER=minio. It
# verifies SigV4 (and session tokens: only its own STS's), and implements multipart uploads,
# ListObjectsV2, multi-object delete and conditional writes (If-None-Match: * and If-Match on
# PutObject, checked in test_s3_store.sh) itself.
MINIO_BIN=$(RR_TOOLS_PRINT=1 "$RR_SRC/tests/thirdparty/install.sh" minio)
# Its root credentials (MinIO wants at least 3 and 8 characters).
S3_AKID=rr-test-root
S3_SECRET=rr-test-root-secret

# start_minio PORT DIR LOG: starts MinIO on 127.0.0.1:PORT over DIR (kept across restarts),
# waits until it is live, sets S3_PID. The bucket is made by start_s3.
start_minio() {
	local port=$1 dir=$2 log=$3
	"$RR_SRC/tests/thirdparty/install.sh" minio
	mkdir -p "$dir"
	# No console, no update checks, no anonymous telemetry: only the S3 API on loopback.
	MINIO_ROOT_USER=$S3_AKID MINIO_ROOT_PASSWORD=$S3_SECRET MINIO_BROWSER=off \
	MINIO_UPDATE=off MINIO_REGION=us-east-1 MINIO_CALLHOME_ENABLE=off \
		"$MINIO_BIN" server --quiet --anonymous --address "127.0.0.1:$port" "$dir" > "$log" 2>&1 &
	# shellcheck disable=SC2034 # s3lib.sh's, which stops it
	S3_PID=$!
	wait_for 60 curl -fs -o /dev/null "http://127.0.0.1:$port/minio/health/live" ||
		fail "MinIO did not start: $(tail -n 5 "$log")"
}

# minio_mb BUCKET: creates the bucket (a SigV4-signed PUT, curl signing it).
minio_mb() {
	wait_for 10 curl -fsS -o "$W/minio-mb.out" -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" \
		--user "$S3_AKID:$S3_SECRET" "http://127.0.0.1:$S3_PORT/$1" 2> "$W/minio-mb.err" ||
		fail "could not create bucket $1 in MinIO: $(cat "$W/minio-mb.err" "$W/minio-mb.out")"
}
