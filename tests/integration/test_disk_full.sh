#!/usr/bin/env bash
# The store's disk fills up during a persist: the persist fails with a clear line, nothing
# half-written is left, training goes on, and the previous checkpoint stays restorable.
. "$(dirname "$0")/lib.sh"

cat > trainer.sh <<'SH'
#!/bin/sh
set -e
d=$RESUME_RUN_CHECKPOINT_DIR
mkdir "$d/.step-1.tmp"; echo "small state" > "$d/.step-1.tmp/state.txt"; mv "$d/.step-1.tmp" "$d/step-1"
sleep 1
mkdir "$d/.step-2.tmp"; head -c 3000000 /dev/urandom > "$d/.step-2.tmp/big.bin"
echo "state 2" > "$d/.step-2.tmp/state.txt"; mv "$d/.step-2.tmp" "$d/step-2"
sleep 1
echo "trainer still running after step-2"
SH
chmod +x trainer.sh

# A 1 MiB filesystem for the store, in a private mount namespace (root needed; CI is root).
mkdir -p small
unshare --mount sh -c "mount -t tmpfs -o size=1m tmpfs small && \
	'$RR_BIN' --store file://$W/small/store --checkpoint-dir $W/ck -- ./trainer.sh > full.log 2>&1; \
	echo \$? > rc.txt; cp -a small/store store-copy" || fail "cannot mount a tmpfs (needs root)"
expect_eq "$(cat rc.txt)" 0 "agent exit status (the trainer's)"
expect_grep 'persisted step-1' full.log "step-1 persisted"
expect_grep 'persist of step-2 failed.*no space left on device' full.log "clear failure line"
expect_grep 'trainer still running after step-2' full.log "training went on"
ok "disk full: persist of step-2 failed clearly, training went on"

[ ! -e store-copy/default/checkpoints/step-2 ] || fail "step-2 has a manifest"
[ -z "$(find store-copy -name '.*' -type f)" ] || fail "temp files left: $(find store-copy -name '.*' -type f)"
grep -q '"checkpoint":"step-1"' store-copy/default/LATEST || fail "LATEST moved away from step-1"
run_rr verify.log verify --store "file://$W/store-copy"
expect_eq "$RC" 0 "verify"
run_rr restore.log restore --store "file://$W/store-copy" --to restored
expect_eq "$RC" 0 "restore"
expect_eq "$(cat restored/step-1/state.txt)" "small state" "restored content"
ok "no manifest or temp file for step-2; LATEST still step-1; step-1 verifies and restores"
finish
