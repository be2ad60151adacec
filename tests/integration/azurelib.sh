# Azure test server helpers, sourced after lib.sh: Microsoft's Azurite blob emulator (it
# verifies Shared Key signatures and SAS tokens) on 127.0.0.1, the well-known development
# account, and the variables that point the agent and the Azure CLI at it.
AZ_ACCOUNT=devstoreaccount1
AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
# shellcheck disable=SC2034 # used by the tests that source this file
AZ_CONTAINER=ckpt
AZ_PID=
AZ_ENV=() # NAME=VALUE... in Azurite's environment only (start_azurite_back)
AZURITE_DIR=${RR_AZURITE_DIR:-/var/tmp/resume-run-azurite}

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_azurite [ARGS...]: Azurite's blob service on a free port, in memory, with any more
# azurite-blob options (node takes a while to start on a loaded 2-core machine: up to 90 s
# is allowed).
start_azurite() {
	AZ_PORT=$(free_port)
	"$RR_SRC/tests/azure/install-azurite.sh"
	env "${AZ_ENV[@]}" "$AZURITE_DIR/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$AZ_PORT" \
		--inMemoryPersistence --skipApiVersionCheck --disableProductStyleUrl "$@" \
		> "$W/azurite.log" 2>&1 &
	AZ_PID=$!
	wait_for 90 "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $AZ_PORT))" 2>/dev/null ||
		fail "Azurite did not start: $(tail -5 "$W/azurite.log")"
	AZ_ENDPOINT="http://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT"
}

# start_azurite_oauth: Azurite over HTTPS with a certificate of a private CA made here
# (tlslib.sh, sourced first; REQUESTS_CA_BUNDLE trusts it, for the agent and the Azure CLI
# alike), accepting Microsoft Entra ID bearer tokens besides Shared Key: "--oauth basic"
# checks each token's audience, issuer and lifetime (nbf, exp), not its signature. Azurite
# takes bearer tokens only over HTTPS.
start_azurite_oauth() {
	make_ca azure-ca
	make_cert azurite azure-ca "IP:127.0.0.1,DNS:localhost"
	start_azurite --oauth basic --cert "$TLS_DIR/azurite.pem" --key "$TLS_DIR/azurite.key"
	AZ_ENDPOINT="https://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT"
	export REQUESTS_CA_BUNDLE="$TLS_DIR/azure-ca.pem"
}

# start_azurite_back: start_azurite with Azurite's clock two hours back (libfaketime), as
# Azure's blobs cannot be aged by hand; azurite_clock_right sets it right while Azurite runs,
# after which what it stored before is two hours old. The file is read at every clock call
# (FAKETIME_NO_CACHE); timers (the monotonic clock) are left alone.
start_azurite_back() {
	local lib
	lib=$(find /usr/lib -name libfaketimeMT.so.1 2>/dev/null | head -n 1)
	[ -n "$lib" ] || fail "libfaketime is missing (scripts/install-deps.sh test)"
	echo "-2h" > "$W/azurite-clock"
	# Azurite's alone: a prefix on the function call would put its installer and the
	# readiness probes under libfaketime too.
	AZ_ENV=(LD_PRELOAD="$lib" FAKETIME_TIMESTAMP_FILE="$W/azurite-clock" FAKETIME_NO_CACHE=1
		FAKETIME_DONT_FAKE_MONOTONIC=1)
	start_azurite
	AZ_ENV=()
}
azurite_clock_right() { echo "+0" > "$W/azurite-clock"; }

stop_azurite() {
	[ -n "$AZ_PID" ] || return 0
	kill "$AZ_PID" 2>/dev/null || true
	wait "$AZ_PID" 2>/dev/null || true
	# libfaketime (start_azurite_back) names its shared memory and semaphore after the
	# process that loaded it first and removes them only when that process exits on its own:
	# killed, it leaves them in /dev/shm.
	rm -f "/dev/shm/faketime_shm_$AZ_PID" "/dev/shm/sem.faketime_sem_$AZ_PID"
	AZ_PID=
}

# Only what the test sets: nothing of the machine's Azure configuration.
az_env() {
	unset AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN AZURE_FEDERATED_TOKEN_FILE \
	      AZURE_CLIENT_ID AZURE_TENANT_ID AZURE_CLIENT_SECRET AZURE_AUTHORITY_HOST \
	      AZURE_STORAGE_ACCOUNT AZURE_POD_IDENTITY_AUTHORITY_HOST
	export HOME="$W/home" AZURE_CONFIG_DIR="$W/home/.azure" AZURE_CORE_COLLECT_TELEMETRY=no
	mkdir -p "$HOME"
	export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$AZ_ENDPOINT;"
}

# Debian's Azure CLI against Azurite (the connection string above names it), kept loaded
# between calls by tests/azure/az_server.py (a fresh `az` spends seconds loading its command
# table for each call): each call sends the working directory, where its stdout and stderr
# go, the AZURE_* environment and the arguments, and gets back az's exit status.
AZ_SERVER_PID=
start_az_server() {
	AZ_REQ="$W/az-server.req" AZ_REP="$W/az-server.rep"
	mkfifo "$AZ_REQ" "$AZ_REP"
	mkdir -p "$W/home"
	env -u LD_PRELOAD HOME="$W/home" AZURE_CONFIG_DIR="$W/home/.azure" AZURE_CORE_COLLECT_TELEMETRY=no \
		/usr/bin/python3 "$RR_SRC/tests/azure/az_server.py" "$AZ_REQ" "$AZ_REP" \
		> "$W/az-server.log" 2>&1 &
	AZ_SERVER_PID=$!
}
stop_az_server() {
	[ -n "$AZ_SERVER_PID" ] || return 0
	kill "$AZ_SERVER_PID" 2>/dev/null || true
	wait "$AZ_SERVER_PID" 2>/dev/null || true
	AZ_SERVER_PID=
}
azcli() {
	local out err rc
	out=$(mktemp "$W/az.out.XXXXXX") err=$(mktemp "$W/az.err.XXXXXX")
	kill -0 "$AZ_SERVER_PID" 2>/dev/null || fail "the Azure CLI server died: $(tail -n 5 "$W/az-server.log")"
	local vars=() v
	mapfile -t vars < <(compgen -e | grep -E '^(AZURE_|REQUESTS_CA_BUNDLE$)' || true)
	{
		printf '%s\0' "$PWD" "$out" "$err" "${#vars[@]}"
		for v in "${vars[@]}"; do printf '%s=%s\0' "$v" "${!v}"; done
		printf '%s\0' "$@" --only-show-errors
	} > "$AZ_REQ"
	read -r rc < "$AZ_REP"
	cat "$out"
	cat "$err" >&2
	rm -f "$out" "$err"
	return "$rc"
}
start_az_server

# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'az_rc=$?; stop_azurite; stop_az_server; (exit $az_rc); cleanup' EXIT
