#!/usr/bin/env bash
# Installs @20minutes/s3rver 5.0.0 (an S3 server that verifies SigV4 signatures) from npm
# into RR_S3RVER_DIR (default /var/tmp/resume-run-s3rver), once. Prints nothing when it is
# already there.
set -euo pipefail
dir=${RR_S3RVER_DIR:-/var/tmp/resume-run-s3rver}
if [ -f "$dir/node_modules/@20minutes/s3rver/package.json" ] &&
   grep -q '"version": "5.0.0"' "$dir/node_modules/@20minutes/s3rver/package.json"; then
	exit 0
fi
mkdir -p "$dir"
echo "installing @20minutes/s3rver@5.0.0 into $dir"
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error @20minutes/s3rver@5.0.0 >/dev/null)
