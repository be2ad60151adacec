#!/usr/bin/env bash
# The az:// store against Azurite, Microsoft's emulator, which verifies Shared Key
# signatures and SAS tokens: the drill (notice -> durable -> restore bit-identical), a blob
# bigger than a block uploaded as blocks, Shared Key from the connection string and from
# AZURE_STORAGE_KEY, a SAS from the connection string and from AZURE_STORAGE_SAS_TOKEN, a
# wrong key refused with one line, a bearer token refused over plain http to another host,
# and what the agent wrote read back by Debian's Azure CLI.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/azurelib.sh"

start_azurite
az_env
azcli storage container create -n "$AZ_CONTAINER" > /dev/null || fail "az storage container create"
STORE="az://$AZ_CONTAINER/runs"
export RESUME_RUN_STORE=$STORE
STEPS=300
reference_run $STEPS ref.json

# --- the drill, on Azure Blob ---
( wait_for 30 test -d .resume-run/checkpoints/step-50 && touch NOTICE ) &
notice_pid=$!
run_rr m1.log --precision exact --drill-file NOTICE -- "$PY" "$TRAINER" --steps $STEPS --step-time 0.01 --out m1.json
wait $notice_pid
expect_eq "$RC" "$RR_PREEMPTED" "machine 1 exit status"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' m1.log "durable before exit"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m1.log)
[ -n "$saved" ] || fail "trainer did not checkpoint on the notice"
"$RR_BIN" ls > ls.out 2>&1 || fail "ls: $(cat ls.out)"
expect_grep "^\* step-$saved +committed" ls.out "ls over Azure shows step-$saved as LATEST"
"$RR_BIN" verify > verify.out 2>&1 || fail "verify: $(cat verify.out)"
expect_grep "^step-$saved: ok" verify.out "verify over Azure"
ok "drill: step-$saved durable in Azure Blob (Azurite) before the trainer exited; ls and verify read it back"

rm -rf .resume-run/checkpoints NOTICE
run_rr m2.log --precision exact -- "$PY" "$TRAINER" --steps $STEPS --step-time 0 --out m2.json
expect_eq "$RC" 0 "machine 2 exit status"
expect_grep "restored step-$saved" m2.log "restore from Azure"
expect_eq "$(json_field m2.json sha256)" "$(json_field ref.json sha256)" "final weights"
expect_eq "$(json_field m2.json loss_history_sha256)" "$(json_field ref.json loss_history_sha256)" "loss history"
ok "new machine: restored step-$saved from Azure Blob, final state bit-identical to an uninterrupted run"

# --- the Azure CLI reads what the agent wrote ---
last=$(sed -nE 's/^\* (step-[0-9]+) .*/\1/p' <("$RR_BIN" ls))
[ -n "$last" ] || fail "no LATEST checkpoint after machine 2"
azcli storage blob list -c "$AZ_CONTAINER" --prefix runs/default/ --num-results '*' --query '[].name' -o tsv > az-ls.out
expect_grep "^runs/default/checkpoints/$last/manifest.json$" az-ls.out "az storage blob list sees the manifest"
expect_grep "^runs/default/LATEST$" az-ls.out "az storage blob list sees LATEST"
azcli storage blob download -c "$AZ_CONTAINER" -n runs/default/LATEST -f latest.json > /dev/null
grep -q "\"checkpoint\":\"$last\"" latest.json || fail "LATEST read by the Azure CLI: $(cat latest.json)"
mkdir -p az-copy
azcli storage blob download-batch -s "$AZ_CONTAINER" -d az-copy --pattern 'runs/*' > /dev/null
run_rr az-restore.log restore --store "file://$W/az-copy/runs" --to from-az
expect_eq "$RC" 0 "restore from the Azure CLI's copy"
run_rr hand.log restore --checkpoint "$last" --to by-hand
diff -r "from-az/$last" "by-hand/$last" || fail "Azure CLI copy and az:// restore differ"
diff -r "by-hand/$last" ".resume-run/checkpoints/$last" || fail "restore from Azure differs from the original"
ok "interop: az storage blob list/download read the run; the CLI's download-batch restores to the trainer's own files"

# --- a blob bigger than a block: 8 MiB of random bytes with 5 MiB blocks goes up as two
# blocks (in flight at once) and one block list, and comes down in two ranges ---
mkdir -p big-ckpt/.step-1.tmp
head -c 8388608 /dev/urandom > big-ckpt/.step-1.tmp/random.bin
mv big-ckpt/.step-1.tmp big-ckpt/step-1
export RESUME_RUN_S3_PART_SIZE=5242880
run_rr big.log -v --store "az://$AZ_CONTAINER/big" --checkpoint-dir big-ckpt -- true
expect_eq "$RC" 0 "persist with a chunk in blocks"
# shellcheck disable=SC2016 # the backticks are JMESPath's literal, not the shell's
chunk=$(azcli storage blob list -c "$AZ_CONTAINER" --prefix big/default/chunks/ --num-results '*' \
	--query '[?properties.contentLength > `5242880`].name' -o tsv)
[ -n "$chunk" ] || fail "no chunk bigger than a block"
azcli storage blob show -c "$AZ_CONTAINER" -n "$chunk" --query properties.blobType -o tsv > type.out
expect_grep '^BlockBlob$' type.out "the big chunk is a block blob"
run_rr big-restore.log restore --store "az://$AZ_CONTAINER/big" --to big-restored
expect_eq "$RC" 0 "restore of the chunk in blocks"
cmp big-restored/step-1/random.bin big-ckpt/step-1/random.bin || fail "blob in blocks differs"
unset RESUME_RUN_S3_PART_SIZE
ok "blocks: an 8 MiB chunk went up as Put Block x2 + Put Block List and came back identical in ranges"

# --- Shared Key from AZURE_STORAGE_KEY (the connection string only names the endpoint) ---
env AZURE_STORAGE_CONNECTION_STRING="BlobEndpoint=$AZ_ENDPOINT" AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT \
	AZURE_STORAGE_KEY="$AZ_KEY" "$RR_BIN" ls > key.out 2>&1 || fail "ls with AZURE_STORAGE_KEY: $(cat key.out)"
expect_grep "^\* $last" key.out "ls with AZURE_STORAGE_KEY"
ok "Shared Key from AZURE_STORAGE_KEY"

# --- SAS: from the connection string, and from AZURE_STORAGE_SAS_TOKEN ---
expiry=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%MZ)
sas=$(azcli storage container generate-sas -n "$AZ_CONTAINER" --permissions racwdl --expiry "$expiry" -o tsv)
[ -n "$sas" ] || fail "no SAS from the Azure CLI"
env AZURE_STORAGE_CONNECTION_STRING="BlobEndpoint=$AZ_ENDPOINT;SharedAccessSignature=$sas" \
	AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT "$RR_BIN" restore --checkpoint "$last" --to by-sas > sas.out 2>&1 ||
	fail "restore with a SAS connection string: $(cat sas.out)"
diff -r "by-sas/$last" "by-hand/$last" || fail "restore over SAS differs"
env AZURE_STORAGE_CONNECTION_STRING="BlobEndpoint=$AZ_ENDPOINT" AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT \
	AZURE_STORAGE_SAS_TOKEN="?$sas" RESUME_RUN_STORE="az://$AZ_CONTAINER/sas-run" \
	"$RR_BIN" --checkpoint-dir big-ckpt -- true > sas-put.log 2>&1 || fail "persist over SAS: $(cat sas-put.log)"
azcli storage blob list -c "$AZ_CONTAINER" --prefix sas-run/default/LATEST --query '[].name' -o tsv > sas-ls.out
expect_grep '^sas-run/default/LATEST$' sas-ls.out "a run written with AZURE_STORAGE_SAS_TOKEN"
# a SAS that does not allow writing is refused, and the SAS is not logged
ro=$(azcli storage container generate-sas -n "$AZ_CONTAINER" --permissions rl --expiry "$expiry" -o tsv)
env AZURE_STORAGE_CONNECTION_STRING="BlobEndpoint=$AZ_ENDPOINT" AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT \
	AZURE_STORAGE_SAS_TOKEN="$ro" RESUME_RUN_STORE="az://$AZ_CONTAINER/ro-run" \
	"$RR_BIN" --checkpoint-dir big-ckpt -- true > ro.log 2>&1
expect_grep 'Azure refused PUT .*: 403 AuthorizationPermissionMismatch' ro.log "a read-only SAS is refused by Azure"
expect_grep 'the store.s previous checkpoint stays the newest' ro.log "the failed persist is reported"
sig=$(printf '%s' "$ro" | sed -nE 's/.*sig=([^&]*).*/\1/p')
expect_no_grep "$sig" ro.log "the SAS signature is not logged"
ok "SAS: from the connection string and from AZURE_STORAGE_SAS_TOKEN; a read-only SAS refused, never logged"

# --- a wrong key fails at once with one line ---
start=$SECONDS
wrong='AAAAvdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
AZURE_STORAGE_CONNECTION_STRING="AccountName=$AZ_ACCOUNT;AccountKey=$wrong;BlobEndpoint=$AZ_ENDPOINT" \
	run_rr wrong.log -- true
expect_eq "$RC" 125 "exit status with a wrong key"
expect_grep 'AuthenticationFailed|403' wrong.log "the cause is named"
[ "$(grep -c . wrong.log)" -le 2 ] || fail "more than one line for a wrong key: $(cat wrong.log)"
[ $((SECONDS - start)) -le 5 ] || fail "a wrong key took $((SECONDS - start)) s to report"
expect_no_grep 'AAAAvdM02' wrong.log "the key is not logged"
ok "wrong key: exit 125 in $((SECONDS - start)) s with one line: $(head -c 200 wrong.log)"

# --- a bearer token never goes over plain http to another machine ---
env AZURE_STORAGE_CONNECTION_STRING="BlobEndpoint=http://blob.example.invalid/$AZ_ACCOUNT" \
	AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT AZURE_CLIENT_SECRET=s3cret-value AZURE_CLIENT_ID=app \
	AZURE_TENANT_ID=tenant "$RR_BIN" ls > plain.out 2>&1 && fail "bearer over plain http should be refused"
expect_grep 'refusing to send an Azure bearer token .* over plain http' plain.out "the refusal says why"
expect_no_grep 's3cret-value' plain.out "the client secret is not logged"
ok "a bearer token is refused over plain http to another host: $(head -c 160 plain.out)"
