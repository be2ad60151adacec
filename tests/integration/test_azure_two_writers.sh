#!/usr/bin/env bash
# Two machines on one az:// store at once (Azurite): the scenario of twowriterslib.sh (the
# old machine stopped in the middle of persisting step-4 while the new one restores step-3,
# commits its own step-4..6 and retires old checkpoints; LATEST only forward, every
# checkpoint verifies, old chunks deduplicated against written again, no success reported
# for another machine's step-4 when Azure answered 409 BlobAlreadyExists to its manifest).
# Azure's blobs cannot be aged by hand: Azurite runs under libfaketime with its clock two
# hours back while the old machine stores step-1..3, then right again, so those blobs' Last-
# Modified is two hours old when the new machine lists them.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/azurelib.sh"
. "$RR_SRC/tests/integration/twowriterslib.sh"
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'tw_rc=$?; release_agents; stop_azurite; stop_az_server; (exit $tw_rc); cleanup' EXIT

start_azurite_back
az_env
azcli storage container create -n "$AZ_CONTAINER" > /dev/null || fail "az storage container create"
expiry=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%MZ)
sas=$(azcli storage container generate-sas -n "$AZ_CONTAINER" --permissions r --expiry "$expiry" -o tsv)
[ -n "$sas" ] || fail "no SAS from the Azure CLI"

# LATEST read with curl and a read-only SAS (fast enough to watch every change).
tw_latest() { curl -fsS "$AZ_ENDPOINT/$AZ_CONTAINER/runs/default/LATEST?$sas"; }
# Azurite's clock right again: what it stored so far was stored two hours ago.
tw_mark_old() { azurite_clock_right; }
tw_age_old() { :; }

azcli storage blob upload -c "$AZ_CONTAINER" -n clock-check -f "$W/azurite-clock" > /dev/null
made=$(azcli storage blob show -c "$AZ_CONTAINER" -n clock-check --query properties.lastModified -o tsv)
age=$(( $(date +%s) - $(date -d "$made" +%s) ))
[ "$age" -ge 7000 ] || fail "Azurite's clock is not two hours back (a blob made now is $age s old)"
ok "Azurite runs two hours back (libfaketime) until the old machine has stored step-3"

scenario az "az://$AZ_CONTAINER/runs"
finish
