#!/usr/bin/env bash
# A manifest whose paths leave the target directory is refused, even with a valid checksum,
# and nothing is written outside the target.
. "$(dirname "$0")/lib.sh"

run_rr train.log --keep 5 -- "$PY" "$TRAINER" --steps 50 --step-time 0 --checkpoint-every 50
expect_eq "$RC" 0 "training"
store=.resume-run/store/default

# Forge step-999 from step-50: same chunks, one path rewritten to climb out, checksum
# recomputed as the manifest format defines it (sha256 of the compact JSON without it).
"$PY" - "$store" <<'PY'
import hashlib, json, os, sys
store = sys.argv[1]
m = json.load(open(f"{store}/checkpoints/step-50/manifest.json"))
del m["checksum"]
m["checkpoint"] = "step-999"
m["files"][0]["path"] = "../../../escaped.txt"
body = json.dumps(m, separators=(",", ":"), ensure_ascii=False)
m["checksum"] = hashlib.sha256(body.encode()).hexdigest()
os.makedirs(f"{store}/checkpoints/step-999")
open(f"{store}/checkpoints/step-999/manifest.json", "w").write(json.dumps(m, separators=(",", ":")) + "\n")
PY

# The forged manifest's checksum is right: only the path check can refuse it.
run_rr ls.log ls
expect_grep 'step-999 +INCOMPLETE .*leaves the checkpoint directory' ls.log "ls names the refusal"
ok "forged manifest with a valid checksum is refused for its path"

mkdir -p deep/a/b
run_rr restore.log restore --to deep/a/b
expect_eq "$RC" 0 "restore falls back"
expect_grep 'checkpoint step-999 is not usable: manifest rejected: .*leaves the checkpoint directory' restore.log "reason"
expect_grep 'restored step-50 into' restore.log "fallback to step-50"
[ -z "$(find "$W" -name escaped.txt)" ] || fail "a file escaped the target directory"
ok "restore refused ../ paths, wrote nothing outside the target, restored step-50"
finish
