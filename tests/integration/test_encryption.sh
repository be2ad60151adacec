#!/usr/bin/env bash
# Client-side encryption (docs/how-it-works.md, "Encryption"): with --encryption-key-file every
# stored object is sealed (AES-256-GCM), on file:// and on S3 (s3rver). The drill restores
# bit-identical; no file name, tensor name or plaintext marker can be found in any stored
# object; a wrong key, no key, or a key on a clear store is one clear error (125) and nothing is
# restored; a tampered object is damage and restore falls back; incremental checkpoints stay
# incremental (keyed chunk addresses are deterministic). The S3 server: s3rver, not SeaweedFS
# (tests/integration/s3lib.sh): our GCS front (the gs:// half) stores into s3rver.
S3_SERVER=s3rver
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/gcslib.sh"
T="$RR_SRC/tests/integration/trainers"
STEPS=300

"$PY" -c 'import os; print(os.urandom(32).hex())' > key.hex
"$PY" -c 'import os; print(os.urandom(32).hex())' > wrong.hex
chmod 600 key.hex wrong.hex
KEY=$W/key.hex

# sealed_scan DIR NEEDLE...: every object under DIR must be sealed and contain no needle.
# With CLEAR=1 instead: at least one needle must be found (the scan itself can fail).
sealed_scan() {
	CLEAR=${CLEAR:-0} "$PY" - "$@" <<'PY'
import os, sys
root, needles = sys.argv[1], [n.encode() for n in sys.argv[2:]]
clear = os.environ["CLEAR"] == "1"
objects, found = 0, []
for d, dirs, files in os.walk(root):
    dirs[:] = [x for x in dirs if x != ".locks"]
    for name in files:
        p = os.path.join(d, name)
        data = open(p, "rb").read()
        if not data:
            continue  # an upload cut off by a notice, as s3rver keeps it: nothing readable
        objects += 1
        if not clear and not data.startswith(b"\x89RRSEAL\n"):
            sys.exit(f"{p} is not sealed")
        found += [(p, n.decode()) for n in needles if n in data]
if objects == 0:
    sys.exit(f"no objects under {root}")
if clear:
    if not found:
        sys.exit("control: no needle found in a clear store; the scan proves nothing")
    print(f"control: clear store shows {len(set(n for _, n in found))} of {len(needles)} needles")
elif found:
    sys.exit(f"readable in the store: {found[:5]}")
else:
    print(f"{objects} objects, all sealed, none of {len(needles)} needles found")
PY
}

DRILL_NEEDLES=(model.safetensors state.json fc1.weight fc2.bias loss_history rng_state)
TENSOR_NEEDLES=(model.safetensors layer0.weight layer3.weight layer7.weight hand-made)

# --- 1. the drill on file:// with a key ---
reference_run $STEPS ref.json
export RESUME_RUN_ENCRYPTION_KEY_FILE=$KEY
( wait_for 30 test -d .resume-run/checkpoints/step-50 && touch NOTICE ) &
run_rr m1.log --precision exact --drill-file NOTICE -- "$PY" "$TRAINER" --steps $STEPS --step-time 0.01 --out m1.json
wait
expect_eq "$RC" "${RR_PREEMPTED:-0}" "machine 1 exit status"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' m1.log "durable before exit"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m1.log)
[ -n "$saved" ] || fail "trainer did not checkpoint on the notice"
rm -rf .resume-run/checkpoints NOTICE
run_rr m2.log --precision exact -- "$PY" "$TRAINER" --steps $STEPS --step-time 0 --out m2.json
expect_eq "$RC" 0 "machine 2 exit status"
expect_grep "restored step-$saved" m2.log "restore with the key"
expect_eq "$(json_field m2.json sha256)" "$(json_field ref.json sha256)" "final weights"
expect_eq "$(json_field m2.json loss_history_sha256)" "$(json_field ref.json loss_history_sha256)" "loss history"
unset RESUME_RUN_ENCRYPTION_KEY_FILE
ok "file:// drill with a key: step-$saved restored, final state bit-identical to an uninterrupted run"

sealed_scan .resume-run/store "${DRILL_NEEDLES[@]}" | tee scan1.out
ls .resume-run/store/default/events | grep -q -- '-notice.json$' || fail "no notice event"
"$RR_BIN" verify --encryption-key-file "$KEY" > verify.out 2>&1 || fail "verify: $(cat verify.out)"
expect_grep "^step-$STEPS: ok" verify.out "verify with the key"
expect_no_grep "DAMAGED|INCOMPLETE" verify.out "verify with the key"
"$RR_BIN" restore --encryption-key-file "$KEY" --to by-hand > restore.log 2>&1
last=$(ls by-hand)
diff -r "by-hand/$last" ".resume-run/checkpoints/$last" || fail "restore --to differs"
ok "file:// store: every object sealed (events included), no name or marker readable; verify and restore --to agree"

# --- 2. wrong key, no key: one clear error, nothing restored ---
run_rr wrong.log restore --encryption-key-file wrong.hex --to wr
expect_eq "$RC" 125 "restore with a wrong key"
expect_grep 'encrypted with another key \(key id [0-9a-f]{16}; the given key.s id is [0-9a-f]{16}\)' wrong.log "wrong key named"
[ ! -e wr ] || [ -z "$(ls -A wr)" ] || fail "a wrong key restored something: $(ls -R wr)"
rm -rf .resume-run/checkpoints
run_rr wrongrun.log --encryption-key-file wrong.hex -- "$PY" -c 'print("trainer ran")'
expect_eq "$RC" 125 "run with a wrong key"
expect_no_grep 'trainer ran' wrongrun.log "the trainer must not start on a wrong key"
[ -z "$(ls -A .resume-run/checkpoints 2>/dev/null)" ] || fail "a wrong key restored into the checkpoint dir"
run_rr nokey.log restore --to nk
expect_eq "$RC" 125 "restore without a key"
expect_grep "encrypted: give the key with --encryption-key-file" nokey.log "missing key named"
[ ! -e nk ] || [ -z "$(ls -A nk)" ] || fail "restore without a key wrote something"
run_rr vwrong.log verify --encryption-key-file wrong.hex
expect_eq "$RC" 125 "verify with a wrong key"
before=$(find .resume-run/store -type f | wc -l)
find .resume-run/store -type f -exec touch -d '2 hours ago' {} + # past gc's grace
run_rr gcwrong.log gc --keep 1 --encryption-key-file wrong.hex
expect_eq "$RC" 125 "gc with a wrong key"
expect_eq "$(find .resume-run/store -type f | wc -l)" "$before" "objects after gc with a wrong key"
for f in wrong.log wrongrun.log vwrong.log gcwrong.log; do
	for k in "$(cat key.hex)" "$(cat wrong.hex)"; do
		! grep -qF "$k" "$f" || fail "$f shows a key"
		! grep -qF "${k:0:16}" "$f" || fail "$f shows part of a key"
	done
done
run_rr envrun.log --encryption-key-file "$KEY" -- "$PY" -c 'import os; print("ENV", sorted(os.environ.items()))'
expect_eq "$RC" 0 "a trainer run with the key"
expect_grep '^ENV ' envrun.log "the trainer printed its environment"
! grep -qiF "$(cat key.hex)" envrun.log || fail "the key reached the trainer's environment or the log"
ok "wrong key / no key: exit 125 with one clear line, nothing restored, gc deletes nothing, no key material printed"

# A key on a clear store, and a malformed key file. (The clear run stores what section 3
# stores with a key, exact, so that its chunk objects can be counted against those.)
run_rr clr.log --precision exact --store "file://$W/clear" --checkpoint-dir "$W/cclear" -- "$PY" "$T/tensor_files.py" incremental
expect_eq "$RC" 0 "clear run"
run_rr clrkey.log restore --store "file://$W/clear" --encryption-key-file "$KEY" --to ck
expect_eq "$RC" 125 "a key on a clear store"
expect_grep 'is not encrypted' clrkey.log "clear store named"
[ ! -e ck ] || fail "a key on a clear store restored something"
printf '%s' "$(cut -c1-40 key.hex) $(cut -c41-64 key.hex)" > spaced.hex
chmod 600 spaced.hex
run_rr spaced.log ls --encryption-key-file spaced.hex
expect_eq "$RC" 125 "a key file with a space"
expect_grep 'character 41 is not a hex digit' spaced.log "bad key file named"
! grep -qF "$(cut -c1-16 key.hex)" spaced.log || fail "the bad key file's digits were printed"
cp key.hex loose.hex && chmod 644 loose.hex
run_rr loose.log ls --encryption-key-file loose.hex
expect_eq "$RC" 0 "ls with a group-readable key file"
expect_grep 'loose.hex can be read by its group or others' loose.log "loose mode warned"
ok "key on a clear store refused; malformed key file refused without echoing it; loose mode warned"

# --- 3. tensors, incremental, tampering (file://) ---
run_rr inc.log --precision exact --store "file://$W/enc" --checkpoint-dir "$W/c5" --encryption-key-file "$KEY" -- "$PY" "$T/tensor_files.py" incremental
expect_eq "$RC" 0 "encrypted incremental run"
expect_grep 'persisted step-2: .* 9 of 11 segments unchanged' inc.log "unchanged tensors reused"
n_enc=$(find "$W/enc/default/chunks" -type f | wc -l)
n_clr=$(find "$W/clear/default/chunks" -type f | wc -l)
expect_eq "$n_enc" "$n_clr" "chunk objects with and without encryption"
s1=$(sed -nE 's/.*persisted step-1: .* ([0-9.]+ [kMG]?B) new.*/\1/p' inc.log)
s2=$(sed -nE 's/.*persisted step-2: .* ([0-9.]+ [kMG]?B) new.*/\1/p' inc.log)
sealed_scan "$W/enc" "${TENSOR_NEEDLES[@]}" | tee scan2.out
CLEAR=1 sealed_scan "$W/clear" "${TENSOR_NEEDLES[@]}"
"$RR_BIN" restore --store "file://$W/enc" --encryption-key-file "$KEY" --to r5 > r5.log 2>&1 || fail "restore: $(cat r5.log)"
cmp c5/step-2/model.safetensors r5/step-2/model.safetensors || fail "exact tensors differ after restore"
ok "tensors: step-2 wrote $s2 (step-1 $s1), $n_enc chunk objects as without a key; restored byte-identical; no tensor name readable"

# Tampering: one flipped byte in step-2's sealed manifest is damage, restore falls back.
"$PY" - "$W/enc/default/checkpoints/step-2/manifest.json" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 1; open(p, "wb").write(b)
PY
run_rr tv.log verify --store "file://$W/enc" --encryption-key-file "$KEY"
expect_eq "$RC" 1 "verify of a tampered store"
expect_grep 'step-2: INCOMPLETE .*tag mismatch' tv.log "tampered manifest reported"
expect_grep '^step-1: ok' tv.log "untouched checkpoint still ok"
run_rr tr.log restore --store "file://$W/enc" --encryption-key-file "$KEY" --to r6
expect_eq "$RC" 0 "restore falls back"
expect_grep 'restored step-1' tr.log "fell back to step-1"
[ ! -e r6/step-2 ] || fail "the tampered checkpoint was restored"
# Every chunk flipped (their names say nothing of which checkpoint uses them): verify
# reports the first it reads as damage, by its GCM tag.
find "$W/enc/default/chunks" -type f > chunks.list
"$PY" - chunks.list <<'PY'
import sys
for p in open(sys.argv[1]).read().split():
    b = bytearray(open(p, "rb").read()); b[-1] ^= 0x80; open(p, "wb").write(b)
PY
run_rr tc.log verify --store "file://$W/enc" --encryption-key-file "$KEY"
expect_eq "$RC" 1 "verify with tampered chunks"
expect_grep '^step-1: DAMAGED \(chunk [0-9a-f]{64} of model.safetensors cannot be read: .* does not authenticate \(AES-GCM tag mismatch\)' tc.log "tampered chunk reported"
ok "tampered manifest or chunk: reported as damage (GCM tag), restore fell back to step-1"

# --- 4. the same on S3 ---
start_s3
s3_env
STORE="s3://$S3_BUCKET/enc"
export RESUME_RUN_STORE=$STORE RESUME_RUN_ENCRYPTION_KEY_FILE=$KEY
rm -rf .resume-run NOTICE
( wait_for 30 test -d .resume-run/checkpoints/step-50 && touch NOTICE ) &
notice_pid=$!
run_rr s3m1.log --precision exact --drill-file NOTICE -- "$PY" "$TRAINER" --steps $STEPS --step-time 0.01 --out s3m1.json
wait $notice_pid
expect_eq "$RC" "${RR_PREEMPTED:-0}" "S3 machine 1 exit status"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' s3m1.log)
[ -n "$saved" ] || fail "trainer did not checkpoint on the notice (S3)"
rm -rf .resume-run/checkpoints NOTICE
run_rr s3m2.log --precision exact -- "$PY" "$TRAINER" --steps $STEPS --step-time 0 --out s3m2.json
expect_eq "$RC" 0 "S3 machine 2 exit status"
expect_grep "restored step-$saved" s3m2.log "restore from S3 with the key"
expect_eq "$(json_field s3m2.json sha256)" "$(json_field ref.json sha256)" "final weights (S3)"
ok "S3 drill with a key: step-$saved restored, final state bit-identical"

run_rr s3inc.log --precision exact --run-id tensors --checkpoint-dir "$W/c7" -- "$PY" "$T/tensor_files.py" incremental
expect_eq "$RC" 0 "encrypted incremental run on S3"
expect_grep 'persisted step-2: .* 9 of 11 segments unchanged' s3inc.log "unchanged tensors reused on S3"
"$RR_BIN" restore --run-id tensors --to r7 > r7.log 2>&1 || fail "S3 restore: $(cat r7.log)"
cmp c7/step-2/model.safetensors r7/step-2/model.safetensors || fail "S3 tensors differ after restore"
# Every object as another S3 client sees it.
s3cli s3 cp --recursive --quiet "$STORE/" s3copy/
sealed_scan s3copy "${DRILL_NEEDLES[@]}" "${TENSOR_NEEDLES[@]}" | tee scan3.out
expect_eq "$(find s3copy/tensors/chunks -type f | wc -l)" "$n_clr" "chunk objects on S3"
# A sealed chunk bigger than a part goes up in parts and comes down in ranges.
mkdir -p big-ckpt/.step-1.tmp
head -c 8388608 /dev/urandom > big-ckpt/.step-1.tmp/random.bin
mv big-ckpt/.step-1.tmp big-ckpt/step-1
RESUME_RUN_S3_PART_SIZE=5242880 run_rr big.log --run-id big --checkpoint-dir big-ckpt -- true
expect_eq "$RC" 0 "persist of a multipart sealed chunk"
s3cli s3 ls --recursive "$STORE/big/chunks/" > big-ls.out
awk '$3 > 8388608 { found = 1 } END { exit !found }' big-ls.out || fail "no sealed chunk bigger than 8 MiB: $(cat big-ls.out)"
RESUME_RUN_S3_PART_SIZE=5242880 run_rr big-restore.log restore --run-id big --to big-restored
expect_eq "$RC" 0 "restore of a multipart sealed chunk"
cmp big-restored/step-1/random.bin big-ckpt/step-1/random.bin || fail "multipart sealed object differs"
unset RESUME_RUN_ENCRYPTION_KEY_FILE
run_rr s3wrong.log restore --encryption-key-file "$W/wrong.hex" --to s3wr
expect_eq "$RC" 125 "S3 restore with a wrong key"
expect_grep 'encrypted with another key' s3wrong.log "wrong key named (S3)"
[ ! -e s3wr ] || [ -z "$(ls -A s3wr)" ] || fail "a wrong key restored something from S3"
ok "S3: objects sealed as the AWS CLI reads them, incremental stays incremental, a multipart sealed chunk round-trips, wrong key refused"

# --- 5. gs:// (the GCS test server in front of the same S3 server): generation
# preconditions and bearer tokens under the sealed store ---
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'g_rc=$?; stop_gcs; stop_s3; cleanup $g_rc' EXIT
gcs_key sa.json
start_gcs gcs.log --key-file sa.json --accept-token gcp-token
(
	export STORAGE_EMULATOR_HOST="127.0.0.1:$GPORT" GOOGLE_APPLICATION_CREDENTIALS="$W/sa.json"
	export RESUME_RUN_STORE="gs://$S3_BUCKET/gcs"
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY GCE_METADATA_HOST
	run_rr gcs-inc.log --precision exact --encryption-key-file "$KEY" --checkpoint-dir "$W/c8" -- "$PY" "$T/tensor_files.py" incremental
	expect_eq "$RC" 0 "encrypted incremental run on gs://"
	expect_grep 'persisted step-2: .* 9 of 11 segments unchanged' gcs-inc.log "unchanged tensors reused on gs://"
	run_rr gcs-r.log restore --encryption-key-file "$KEY" --to r8
	expect_eq "$RC" 0 "restore from gs:// with the key"
	cmp c8/step-2/model.safetensors r8/step-2/model.safetensors || fail "gs:// tensors differ after restore"
	run_rr gcs-nokey.log ls
	expect_eq "$RC" 125 "ls of an encrypted gs:// run without the key"
	expect_grep 'encrypted: give the key' gcs-nokey.log "missing key named (gs://)"
)
s3cli s3 cp --recursive --quiet "s3://$S3_BUCKET/gcs/" gcscopy/
sealed_scan gcscopy "${TENSOR_NEEDLES[@]}"
ok "gs://: sealed, incremental, restored byte-identical, no key refused"
finish
