# Our GCS XML API test server (tests/gcs/server.py) in front of the S3 test server, for the
# tests sourced after lib.sh and s3lib.sh (start_s3 first).
#
# gcs_key FILE [TOKEN_URL]: a fresh service-account key (tests/gcs/make_sa_key.py) whose
# token_uri is TOKEN_URL; without one, the server's own token endpoint, filled in by start_gcs
# when the key is one of its --key-file arguments (the port is known only once it listens).
#
# start_gcs LOG [server.py args...]: starts the server on a port the kernel picks when it
# binds (a port picked beforehand can be taken by another test in between), stderr to LOG;
# waits until it serves (60 s: Python with botocore and cryptography starts slowly beside the
# sanitizer builds), failing at once with LOG's tail when it exits; sets GPORT and GCS_PID.
# stop_gcs: stops it.
GCS_PID=
GCS_KEY_PENDING_URI=http://127.0.0.1:0/token

gcs_key() {
	"$PY" "$RR_SRC/tests/gcs/make_sa_key.py" "${2:-$GCS_KEY_PENDING_URI}" > "$1" ||
		fail "make_sa_key.py failed"
}

start_gcs() {
	local log=$1 prev='' a; shift
	: > "$W/gcs.out"
	"$PY" "$RR_SRC/tests/gcs/server.py" --port 0 --s3 "http://127.0.0.1:$S3_PORT" \
		--bucket "$S3_BUCKET" "$@" > "$W/gcs.out" 2> "$log" &
	GCS_PID=$!
	wait_for 60 s_gcs_ready_or_gone
	GPORT=$(sed -nE 's/^ready ([0-9]+)$/\1/p' "$W/gcs.out")
	[ -n "$GPORT" ] || fail "the GCS test server did not start: $(tail -n 5 "$log")"
	for a in "$@"; do
		[ "$prev" != --key-file ] || s_gcs_point_key "$a"
		prev=$a
	done
}

s_gcs_ready_or_gone() { grep -q '^ready' "$W/gcs.out" || ! kill -0 "$GCS_PID" 2> /dev/null; }

s_gcs_point_key() {
	"$PY" - "$1" "$GCS_KEY_PENDING_URI" "http://127.0.0.1:$GPORT/token" <<'PY' || fail "could not point $1 at the GCS test server"
import json, sys
path, pending, url = sys.argv[1:]
with open(path) as f:
    key = json.load(f)
if key.get("token_uri") == pending:
    key["token_uri"] = url
    with open(path + ".tmp", "w") as f:
        json.dump(key, f)
    import os
    os.replace(path + ".tmp", path)
PY
}

stop_gcs() {
	[ -z "$GCS_PID" ] || kill "$GCS_PID" 2> /dev/null
	GCS_PID=
}
