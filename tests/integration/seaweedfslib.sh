# SeaweedFS (github.com/seaweedfs/seaweedfs, Apache-2.0, built once from the Go module proxy
# into a cache outside the checkout by tests/thirdparty/install.sh), sourced by s3lib.sh when
# S3_SERVER=seaweedfs: `weed mini` runs a master, a volume server, a filer, the S3 gateway and
# an admin server in one process. The gateway verifies SigV4 against the identities of an
# s3.json file, and implements multipart uploads, ListObjectsV2, multi-object delete,
# conditional writes (If-None-Match: * and If-Match on PutObject, checked in
# test_s3_store.sh) and an STS (AssumeRole, whose session tokens it checks) itself.
SEAWEEDFS_BIN=$(RR_TOOLS_PRINT=1 "$RR_SRC/tests/thirdparty/install.sh" seaweedfs)
S3_AKID=rr-test-akid
S3_SECRET=rr-test-secret-key
# The role test_s3_store.sh's container credentials come from (AssumeRole).
SEAWEEDFS_ROLE=arn:aws:iam::000000000000:role/rr-test
SEAWEEDFS_PORTS=

# seaweedfs_config FILE: the identities (SigV4 keys), and for STS a signing key, one role any
# identity may assume and the policy it grants (everything).
seaweedfs_config() {
	cat > "$1" <<JSON
{
  "identities": [{"name": "rr-test", "credentials": [{"accessKey": "$S3_AKID", "secretKey": "$S3_SECRET"}],
                  "actions": ["Admin", "Read", "List", "Tagging", "Write"]}],
  "sts": {"tokenDuration": "1h", "maxSessionLength": "12h", "issuer": "rr-test-sts",
          "signingKey": "$(head -c 32 /dev/urandom | base64)"},
  "roles": [{"roleName": "rr-test", "roleArn": "$SEAWEEDFS_ROLE", "attachedPolicies": ["all"],
             "trustPolicy": {"Version": "2012-10-17", "Statement": [
               {"Effect": "Allow", "Principal": "*", "Action": "sts:AssumeRole"}]}}],
  "policies": [{"name": "all", "document": {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": "*", "Resource": "*"}]}}]
}
JSON
}

# free_ports N: N distinct free ports on loopback, held until all are chosen.
free_ports() {
	"$PY" -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))' "$1"
}

# start_seaweedfs PORT DIR LOG: starts SeaweedFS with its S3 gateway on 127.0.0.1:PORT over
# DIR (kept across restarts, as are its other ports) and waits until it answers; sets S3_PID.
# The bucket is made by start_s3. (`weed mini` rather than `weed server`: on SIGTERM the
# latter stops its volume server before its filer, whose last metadata flush then waits 15 s
# for a volume; mini stops them in order, in about 1 s.)
start_seaweedfs() {
	local port=$1 dir=$2 log=$3 master mgrpc volume vgrpc filer fgrpc s3grpc admin agrpc
	"$RR_SRC/tests/thirdparty/install.sh" seaweedfs
	mkdir -p "$dir"
	[ -f "$dir/s3.json" ] || seaweedfs_config "$dir/s3.json"
	# Every port its own free one (a gRPC port defaults to its HTTP port + 10000, which
	# parallel tests could share): the same ones again after a restart.
	[ -n "$SEAWEEDFS_PORTS" ] || SEAWEEDFS_PORTS=$(free_ports 9)
	read -r master mgrpc volume vgrpc filer fgrpc s3grpc admin agrpc <<< "$SEAWEEDFS_PORTS"
	# Only loopback; no telemetry, WebDAV, admin UI, Iceberg or Lance listeners.
	"$SEAWEEDFS_BIN" mini -ip 127.0.0.1 -ip.bind 127.0.0.1 -dir "$dir" \
		-master.port "$master" -master.port.grpc "$mgrpc" -master.telemetry=false \
		-volume.port "$volume" -volume.port.grpc "$vgrpc" \
		-filer.port "$filer" -filer.port.grpc "$fgrpc" -filer.localSocket "$dir/filer.sock" \
		-s3.port "$port" -s3.port.grpc "$s3grpc" -s3.port.iceberg 0 -s3.port.lance 0 \
		-s3.localSocket "$dir/s3.sock" -s3.config "$dir/s3.json" -s3.iam.config "$dir/s3.json" \
		-admin.ui=false -admin.port "$admin" -admin.port.grpc "$agrpc" -admin.port.legacy 0 \
		-webdav=false >> "$log" 2>&1 &
	# shellcheck disable=SC2034 # s3lib.sh's, which stops it
	S3_PID=$!
	wait_for 60 curl -fs -o /dev/null "http://127.0.0.1:$port/status" ||
		fail "SeaweedFS did not start: $(tail -n 5 "$log")"
}

# seaweedfs_mb BUCKET: creates the bucket, then waits until an object can be stored in it
# (the gateway may answer before the master has a volume to write to). curl signs the PUTs
# (curl 7.88 sends no x-amz-content-sha256: with -T it signs UNSIGNED-PAYLOAD, which
# SeaweedFS then assumes; a --data-binary body it signs by its hash, which SeaweedFS refuses).
seaweedfs_mb() {
	local url="http://127.0.0.1:$S3_PORT/$1"
	wait_for 20 curl -fsS -o "$W/s3-mb.out" -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" \
		--user "$S3_AKID:$S3_SECRET" "$url" 2> "$W/s3-mb.err" ||
		fail "could not create bucket $1 in SeaweedFS: $(cat "$W/s3-mb.err" "$W/s3-mb.out")"
	echo ready > "$W/s3-mb.probe"
	wait_for 30 curl -fsS -o "$W/s3-mb.out" -T "$W/s3-mb.probe" --aws-sigv4 "aws:amz:us-east-1:s3" \
		--user "$S3_AKID:$S3_SECRET" "$url/.ready" 2> "$W/s3-mb.err" ||
		fail "SeaweedFS stores no object: $(cat "$W/s3-mb.err" "$W/s3-mb.out")"
	curl -fsS -o /dev/null -X DELETE --aws-sigv4 "aws:amz:us-east-1:s3" \
		--user "$S3_AKID:$S3_SECRET" "$url/.ready"
}
