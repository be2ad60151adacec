#!/usr/bin/env bash
# Restore trusts nothing: a damaged chunk in the newest checkpoint makes restore fall back to
# the one before, loudly; verify reports the damage.
. "$(dirname "$0")/lib.sh"

# Two runs, so that both step-50 and step-100 are in the store: in one run the trainer commits
# step-100 right after step-50, and a step-50 not yet persisted then gives way to it (the
# newest wins), which a loaded machine made happen once.
run_rr train.log --keep 5 -- "$PY" "$TRAINER" --steps 50 --step-time 0 --checkpoint-every 50 --keep-local 0
expect_eq "$RC" 0 "training to step 50"
run_rr train2.log --keep 5 -- "$PY" "$TRAINER" --steps 100 --step-time 0 --checkpoint-every 50 --keep-local 0
expect_eq "$RC" 0 "training on to step 100"
expect_grep 'resumed from step 50' train2.log "the second run went on from step 50"
store=.resume-run/store/default

# A chunk that step-100 uses and step-50 does not.
chunk=$("$PY" - "$store" <<'PY'
import json, sys
store = sys.argv[1]
def chunks(name):
    m = json.load(open(f"{store}/checkpoints/{name}/manifest.json"))
    return {c["sha256"] for f in m["files"] for s in f["segments"] for c in s["chunks"]}
only = sorted(chunks("step-100") - chunks("step-50"))
print(only[0])
PY
)
f="$store/chunks/${chunk:0:2}/$chunk"
# Flip the bits of its middle byte (same size, different bytes).
mid=$(( $(stat -c %s "$f") / 2 ))
"$PY" -c 'import sys; p, i = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, "rb").read()); b[i] ^= 0xff; open(p, "wb").write(b)' "$f" "$mid"
ok "flipped one byte in chunk ${chunk:0:12}... of step-100"

set +e
"$RR_BIN" verify > verify.out 2> verify.err
vrc=$?
set -e
expect_eq "$vrc" 1 "verify exit status"
expect_grep '^step-100: DAMAGED .*does not match its sha256' verify.out "verify names the damage"
expect_grep '^step-50: ok' verify.out "older checkpoint intact"
ok "verify: step-100 DAMAGED, step-50 ok, exit 1"

rm -rf .resume-run/checkpoints
run_rr resume.log -- "$PY" "$TRAINER" --steps 100 --step-time 0 --checkpoint-every 0 --out out.json
expect_eq "$RC" 0 "resume"
expect_grep 'checkpoint step-100 is DAMAGED' resume.log "damage said loudly"
expect_grep 'falling back from damaged checkpoint step-100 to step-50' resume.log "fallback said"
expect_grep 'restored step-50' resume.log "restored the previous one"
expect_grep 'resumed from step 50' resume.log "trainer resumed from step 50"
[ ! -e .resume-run/checkpoints/.step-100.restoring ] || fail "half-restored directory left behind"
ok "restore fell back to step-50 and said so; nothing half-restored left"
finish
