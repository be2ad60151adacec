#!/usr/bin/env bash
# The az:// store with Microsoft Entra ID bearer tokens, end to end: Azurite over HTTPS (a
# private CA made here) in its OAuth mode, which refuses a token whose audience, issuer or
# lifetime is wrong; the tokens from the project's metadata test server, which plays IMDS
# (managed identity) and the Entra token endpoint (service principal, workload identity).
#   - the Azure drill: Scheduled Events Preempt from the metadata server, the checkpoint
#     durable on Azure Blob with the VM's managed identity, the event approved
#     (--azure-ack) only then, and a fresh machine restoring bit-identical (exact);
#   - a user-assigned managed identity (AZURE_CLIENT_ID), and an unknown one refused;
#   - a service principal (AZURE_CLIENT_SECRET), and a wrong secret refused with one line;
#   - workload identity with 6 s tokens: each fetched anew before the one in use expires,
#     the federated token file rotated mid-run and read again;
#   - a token Azure stops accepting before its advertised expiry (403 AuthenticationFailed)
#     fetched anew, no checkpoint lost;
#   - no token, secret or assertion in any log line.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/azurelib.sh"
. "$RR_SRC/tests/integration/tlslib.sh"
. "$RR_SRC/tests/integration/metalib.sh"
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'e_rc=$?; stop_meta; stop_azurite; stop_az_server; (exit $e_rc); cleanup' EXIT

start_azurite_oauth
start_meta azure
az_env
azcli storage container create -n "$AZ_CONTAINER" > /dev/null || fail "az storage container create over https"
# From here on the agent has no key: the connection string names the endpoint only.
export AZURE_STORAGE_CONNECTION_STRING="BlobEndpoint=$AZ_ENDPOINT" AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT
META=(--metadata-endpoint "$META_URL")
ok "Azurite over https on :$AZ_PORT (OAuth basic), the metadata server on $META_URL"

# ident FIELD: python over the metadata server's state; prints the expression's value.
ident() { curl -fsS "$META_CTL/_test/state" | "$PY" -c "import json,sys; s=json.load(sys.stdin); t=s['identity_tokens']; r=s['identity_refused']; print($1)"; }
# at_least EXPR N: ident EXPR is at least N (for wait_for, which runs it afresh each time).
at_least() { [ "$(ident "$1")" -ge "$2" ]; }
# refusals: Azurite's 401 and 403 answers so far (its access log).
refusals() { grep -cE '" 40[13] ' azurite.log || true; }
# no_secrets LOG...: no bearer token (a JWT starts eyJ), secret or assertion was logged.
no_secrets() {
	local f
	for f in "$@"; do
		expect_no_grep 'eyJ[A-Za-z0-9_-]{10}|sp-secret-value|assertion-(one|two)' "$f" "secrets in $f"
	done
}

# --- the Azure drill: Scheduled Events -> durable with the managed identity -> ack ---
STEPS=300
reference_run $STEPS ref.json
( wait_for 60 test -d .resume-run/checkpoints/step-50 && ctl announce ) &
notice_pid=$!
run_rr m1.log --cloud azure "${META[@]}" --azure-ack --precision exact --store "az://$AZ_CONTAINER/drill" \
	-- "$PY" "$TRAINER" --steps $STEPS --step-time 0.01 --out m1.json
wait $notice_pid
expect_eq "$RC" "$RR_PREEMPTED" "machine 1 exit status"
expect_grep 'notice: preempt from azure' m1.log "the Preempt event is the notice"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m1.log)
[ -n "$saved" ] || fail "the trainer did not checkpoint on the notice"
durable=$(grep -n "checkpoint step-$saved is durable in the store" m1.log | head -n 1 | cut -d: -f1)
approved=$(grep -n 'Azure scheduled event .* approved (--azure-ack)' m1.log | head -n 1 | cut -d: -f1)
[ -n "$durable" ] && [ -n "$approved" ] || fail "durable line ($durable) or approval ($approved) missing"
[ "$durable" -lt "$approved" ] || fail "the event was approved (line $approved) before step-$saved was durable (line $durable)"
[ "$(state acks | tr -d '[]')" != "" ] || fail "the metadata server saw no StartRequests"
expect_eq "$(ident "sorted({x['client_id'] for x in t if x['flow'] == 'imds'})")" "['system-assigned']" "tokens of the VM's identity"
ok "drill: Preempt -> step-$saved durable on Azure Blob with the managed identity's token -> event approved after it"

ctl reset
rm -rf .resume-run/checkpoints
run_rr m2.log --cloud azure "${META[@]}" --precision exact --store "az://$AZ_CONTAINER/drill" \
	-- "$PY" "$TRAINER" --steps $STEPS --step-time 0 --out m2.json
expect_eq "$RC" 0 "machine 2 exit status"
expect_grep "restored step-$saved" m2.log "restore on the fresh machine"
expect_eq "$(json_field m2.json sha256)" "$(json_field ref.json sha256)" "final weights"
expect_eq "$(json_field m2.json loss_history_sha256)" "$(json_field ref.json loss_history_sha256)" "loss history"
no_secrets m1.log m2.log
ok "fresh machine: restored step-$saved over https with a bearer token; final state bit-identical to an uninterrupted run"

# --- a user-assigned managed identity, and one the VM does not have ---
ctl "identity?user_assigned=uai-train"
AZURE_CLIENT_ID=uai-train AZURE_POD_IDENTITY_AUTHORITY_HOST=$META_URL \
	run_rr uai.log ls --store "az://$AZ_CONTAINER/drill"
expect_eq "$RC" 0 "ls with a user-assigned identity"
expect_grep "^\* step-[0-9]+ +committed" uai.log "ls with a user-assigned identity"
expect_eq "$(ident "t[-1]['client_id']")" "uai-train" "the token asked for"
AZURE_CLIENT_ID=uai-other AZURE_POD_IDENTITY_AUTHORITY_HOST=$META_URL \
	run_rr uai-bad.log ls --store "az://$AZ_CONTAINER/drill"
expect_eq "$RC" 125 "an identity the VM does not have"
expect_grep 'managed identity \(uai-other\): the token endpoint refused with 400: "invalid_request" "Identity not found"' uai-bad.log "the refusal names the identity"
[ "$(grep -c . uai-bad.log)" -le 2 ] || fail "more than one line for an unknown identity: $(cat uai-bad.log)"
ok "user-assigned identity (AZURE_CLIENT_ID, IMDS from AZURE_POD_IDENTITY_AUTHORITY_HOST); an unknown one: $(head -c 160 uai-bad.log)"

# --- a service principal (client secret) ---
ctl "identity?client_id=rr-app&client_secret=sp-secret-value"
sp_env=(AZURE_TENANT_ID=rr-tenant AZURE_CLIENT_ID=rr-app AZURE_AUTHORITY_HOST="$META_URL")
mkdir -p sp-ck/.step-1.tmp && head -c 3000000 /dev/urandom > sp-ck/.step-1.tmp/w.bin && mv sp-ck/.step-1.tmp sp-ck/step-1
env "${sp_env[@]}" AZURE_CLIENT_SECRET=sp-secret-value "$RR_BIN" --store "az://$AZ_CONTAINER/sp" \
	--checkpoint-dir sp-ck -- true > sp.log 2>&1 || fail "persist as a service principal: $(cat sp.log)"
env "${sp_env[@]}" AZURE_CLIENT_SECRET=sp-secret-value "$RR_BIN" restore --store "az://$AZ_CONTAINER/sp" \
	--to sp-restored > sp-restore.log 2>&1 || fail "restore as a service principal: $(cat sp-restore.log)"
cmp sp-restored/step-1/w.bin sp-ck/step-1/w.bin || fail "service principal: restored bytes differ"
expect_eq "$(ident "len([x for x in t if x['flow'] == 'secret'])")" 2 "tokens issued to the service principal"
env "${sp_env[@]}" AZURE_CLIENT_SECRET=not-the-secret "$RR_BIN" ls --store "az://$AZ_CONTAINER/sp" > sp-bad.log 2>&1 &&
	fail "a wrong client secret was accepted"
expect_grep 'service principal \(rr-app\): the token endpoint refused with 401: "invalid_client" "AADSTS7000215' sp-bad.log "the refusal"
[ "$(grep -c . sp-bad.log)" -le 2 ] || fail "more than one line for a wrong secret: $(cat sp-bad.log)"
expect_no_grep 'not-the-secret' sp-bad.log "the wrong secret is not logged"
no_secrets sp.log sp-restore.log
ok "service principal: persist and restore over https; a wrong secret: $(head -c 170 sp-bad.log)"

# --- workload identity: 6 s tokens, refreshed before they expire; the federated token
# file rotated mid-run (both assertions valid for a moment, then only the new one) ---
ctl "identity?lifetime=6&federated=assertion-one"
printf 'assertion-one' > fed-token
before=$(ident "len(t)")
refused_before=$(ident "len(r)")
cat > wl-train.sh <<'SH'
#!/usr/bin/env bash
for n in $(seq 14); do
	mkdir -p "$RESUME_RUN_CHECKPOINT_DIR/.step-$n.tmp"
	head -c 300000 /dev/urandom > "$RESUME_RUN_CHECKPOINT_DIR/.step-$n.tmp/w.bin"
	mv "$RESUME_RUN_CHECKPOINT_DIR/.step-$n.tmp" "$RESUME_RUN_CHECKPOINT_DIR/step-$n"
	sleep 0.8
done
sleep 1
SH
chmod +x wl-train.sh
new_sha=$(printf 'assertion-two' | sha256sum | cut -c1-64)
refused0=$(refusals)
( wait_for 30 at_least "len(t)" $((before + 2)) &&
	ctl "identity?federated=assertion-one,assertion-two" && printf 'assertion-two' > fed-token &&
	wait_for 30 at_least "len([x for x in t if x['assertion_sha256'] == '$new_sha'])" 1 &&
	ctl "identity?federated=assertion-two" ) > rotate.out 2>&1 &
rotate_pid=$!
env AZURE_TENANT_ID=rr-tenant AZURE_CLIENT_ID=rr-app AZURE_AUTHORITY_HOST="$META_URL" \
	AZURE_FEDERATED_TOKEN_FILE="$W/fed-token" "$RR_BIN" -v --keep 20 --store "az://$AZ_CONTAINER/wl" --checkpoint-dir wl-ck -- ./wl-train.sh > wl.log 2>&1 ||
	fail "run with workload identity: $(grep -v debug wl.log | tail -5)"
wait $rotate_pid || fail "the federated token was not rotated: $(cat rotate.out)"
# Every commit persisted, or gave way in the queue to the next one (the newest wins: a
# persist slower than the trainer's 0.8 s, on a loaded machine, is not this test's failure),
# and the last one persisted.
for n in $(seq 13); do
	grep -q "persisted step-$n:" wl.log || grep -q "step-$((n + 1)) replaces step-$n " wl.log ||
		fail "step-$n neither persisted nor replaced by step-$((n + 1))"
done
expect_grep "persisted step-14:" wl.log "step-14 persisted"
expect_eq "$(ident "len(r)")" "$refused_before" "token requests refused"
expect_eq "$(refusals)" "$refused0" "Azurite's refusals of a token"
"$PY" - "$META_CTL" "$before" "$new_sha" <<'PY' || fail "token timeline"
import json, sys, urllib.request
ctl, before, new = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t = [x for x in json.load(urllib.request.urlopen(ctl + "/_test/state"))["identity_tokens"][before:]]
assert all(x["flow"] == "workload" for x in t), t
assert len(t) >= 3, "only %d tokens in a run of 12 s with 6 s tokens" % len(t)
for a, b in zip(t, t[1:]):
    assert b["at"] < a["jwt_exp"], "token %d was fetched after token %d expired" % (b["n"], a["n"])
rotated = [i for i, x in enumerate(t) if x["assertion_sha256"] == new]
assert rotated and all(x["assertion_sha256"] == new for x in t[rotated[0]:]), \
    "after the rotation a token was fetched with the old assertion"
print("tokens:", " ".join("%d@%.1fs" % (x["n"], x["at"] - t[0]["at"]) for x in t))
PY
puts=$(grep -c '"PUT /devstoreaccount1/ckpt/wl/' azurite.log || true)
n_tokens=$(ident "len(t) - $before")
[ "$puts" -gt $((3 * n_tokens)) ] || fail "$n_tokens tokens for $puts PUTs: tokens are not reused"
no_secrets wl.log
ok "workload identity: 14 checkpoints in $n_tokens tokens of 6 s (for $puts PUTs), each fetched before the one in use expired; the rotated token file was read again"

# --- a token Azure stops accepting before its advertised expiry (revoked, or a clock
# ahead): 403 AuthenticationFailed, a fresh token, nothing lost ---
ctl "identity?lifetime=3600&jwt_lifetime=3"
before=$(ident "len(t)")
refused0=$(refusals)
sed -i 's/seq 14/seq 6/' wl-train.sh
run_rr early.log -v --keep 20 "${META[@]}" --store "az://$AZ_CONTAINER/early" --checkpoint-dir early-ck -- ./wl-train.sh
expect_eq "$RC" 0 "run with tokens that end early"
for n in $(seq 6); do expect_grep "persisted step-$n:" early.log "step-$n persisted"; done
refused=$(($(refusals) - refused0))
[ "$refused" -ge 1 ] || fail "Azurite never refused an expired token (the case did not happen)"
[ "$(ident "len(t) - $before")" -ge 2 ] || fail "no fresh token after the refusal"
no_secrets early.log
ok "a token refused as expired before its time ($refused refusals): fetched anew, 6 of 6 checkpoints persisted"
finish
