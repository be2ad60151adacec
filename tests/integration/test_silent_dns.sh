#!/usr/bin/env bash
# A machine in no cloud whose DNS server never answers (an air-gapped cluster, a firewall
# that drops port 53): cloud detection asks the metadata services by address, as google-auth
# pings GCE, so no lookup of metadata.google.internal holds the agent up. Before, a run
# whose trainer exited at once took 10 s (glibc's two 5 s tries, which libcurl waits for
# even when the request is abandoned), and so would a SIGTERM in a run's first 10 s.
. "$(dirname "$0")/lib.sh"

# A DNS server that takes every query and answers none, on an address of its own.
NS=127.53.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
"$PY" - "$NS" > dns.out 2> dns.log <<'PY' &
import socket, sys, time
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((sys.argv[1], 53))
t = socket.socket(socket.AF_INET, socket.SOCK_STREAM); t.bind((sys.argv[1], 53)); t.listen(16)
print("ready", flush=True)
while True:
    time.sleep(3600)
PY
DNS_PID=$!
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'd_rc=$?; kill $DNS_PID 2>/dev/null; cleanup $d_rc' EXIT
wait_for 60 grep -q '^ready' dns.out || fail "the silent DNS server did not start: $(cat dns.log)"
echo "nameserver $NS" > resolv.conf
# It is silent: a lookup through it takes its full timeout.
unshare --mount sh -c "mount --bind $W/resolv.conf /etc/resolv.conf && timeout 3 getent hosts metadata.google.internal" &&
	fail "the silent DNS server answered"
[ $? -eq 124 ] || fail "the lookup did not hang on the silent DNS server (or the mount namespace failed; root needed)"
ok "a lookup through the silent DNS server hangs"

mkdir -p ck && head -c 1000 /dev/urandom > ck/state.bin
unset RESUME_RUN_CLOUD GCE_METADATA_HOST GCE_METADATA_IP AWS_EC2_METADATA_SERVICE_ENDPOINT
start=$(date +%s%N)
unshare --mount sh -c "mount --bind $W/resolv.conf /etc/resolv.conf && \
	exec '$RR_BIN' -v --cloud auto --store file://$W/store --checkpoint-dir $W/ck -- true" > run.log 2>&1
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_eq "$rc" 0 "agent exit status"
expect_grep 'cloud: none \(no cloud in DMI and no metadata service answered\)' run.log "detection ran its probes"
expect_grep 'persisted state.bin' run.log "the checkpoint persisted"
# 5 s: far above the run's own time (tens of ms) and below the one lookup's 10 s.
[ "$ms" -lt 5000 ] || fail "the run took $ms ms: held up by a DNS lookup ($(cat run.log))"
ok "cloud detection and the run's exit did not wait on the DNS server ($ms ms)"
finish
