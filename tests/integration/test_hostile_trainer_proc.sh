#!/usr/bin/env bash
# The trainer as outside input, process side (docs/failure-modes.md, "A hostile trainer"): it
# inherits no fd of the agent (S3 keep-alive sockets included), its background processes do not
# outlive a restart or the agent, it dies with a SIGKILLed agent, SIGINT/SIGTERM stop a slow
# start-up restore without starting it (exit 75: work left), the agent is not dumpable and has a core limit of 0
# while the trainer gets its own back, --trainer-env strip keeps the agent's credentials from
# it, and a Google token never goes over plain http to a host that is not loopback.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"

LEFT_PIDS=()
proxy_pid=
# Only what still runs in our work directory: a pid that ended may be someone else's now.
stop_all() {
	local p cwd
	for p in "${LEFT_PIDS[@]}" $proxy_pid; do
		cwd=$(readlink "/proc/$p/cwd" 2>/dev/null) || continue
		case "$cwd" in "$W"|"$W"/*) kill -9 "$p" 2>/dev/null || true ;; esac
	done
}
trap 's3_rc=$?; stop_all; stop_s3; cleanup $s3_rc' EXIT

# RR_SECTIONS="2 5" runs only those sections (to watch each one fail on an old build).
want() { [ -z "${RR_SECTIONS:-}" ] || [[ " $RR_SECTIONS " == *" $1 "* ]]; }

# alive PID: the process exists and is not a zombie.
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed -E 's/.*\) ([A-Z]).*/\1/' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
gone() { ! alive "$1"; }

start_s3
s3_env
PROXY_PORT=$(free_port)
"$PY" "$RR_SRC/tests/lib/stall_proxy.py" "$PROXY_PORT" "$S3_PORT" "$W/STALL" > proxy.log 2>&1 &
proxy_pid=$!
wait_for 60 grep -q '^ready' proxy.log || fail "the stalling proxy did not start"
export AWS_ENDPOINT_URL="http://127.0.0.1:$PROXY_PORT"

# --- 1. no inherited fds, S3 sockets included, in the first and in a restarted attempt ---
if want 1; then
cat > fds.py <<'PY'
import os, sys, time
att = os.environ["RESUME_RUN_ATTEMPT"]
ck = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
def listing():
    out = []
    for fd in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            out.append(f"{fd} {os.readlink('/proc/self/fd/' + fd)}")
        except OSError:
            pass
    return out
seen = listing()  # before our own file is open
with open(f"fds-{att}.txt", "w") as f:
    f.write("\n".join(seen) + "\n")
if att == "0":
    # A checkpoint, so the agent's persister talks to S3 before the restart.
    tmp = os.path.join(ck, ".step-1.tmp")
    os.makedirs(tmp)
    with open(os.path.join(tmp, "weights.bin"), "wb") as f:
        f.write(os.urandom(3 << 20))
    os.rename(tmp, os.path.join(ck, "step-1"))
    time.sleep(3)
    sys.exit(1)
PY
run_rr fds.log --store "s3://$S3_BUCKET/runs" --max-restarts 1 -- "$PY" fds.py
expect_eq "$RC" 0 "exit status of the fd run"
expect_grep 'checkpoint step-1 committed' fds.log "the checkpoint was seen"
for att in 0 1; do
	[ -s "fds-$att.txt" ] || fail "attempt $att did not list its fds"
	# 0-2 are ours to keep; the one left is listdir's own directory fd.
	extra=$(awk '$1 > 2 && $2 !~ /^\/proc\/[0-9]+\/fd$/' "fds-$att.txt")
	[ -z "$extra" ] || fail "attempt $att inherited fds from the agent: ${extra//$'\n'/ }"
done
"$RR_BIN" ls --store "s3://$S3_BUCKET/runs" > ls1.out 2>&1 || fail "ls: $(cat ls1.out)"
expect_grep '^\* step-1 +committed' ls1.out "step-1 durable in S3"
ok "no fd of the agent (S3 keep-alive sockets, pipes, inotify) in attempt 0 or the restarted attempt 1"
fi

# --- 2. SIGINT / SIGTERM during a stalled start-up restore ---
if want 2; then
cat > started.sh <<'SH'
touch "$STARTED_FILE"
SH
# A checkpoint to restore (section 1 leaves one; alone, this section makes its own).
if ! "$RR_BIN" ls --store "s3://$S3_BUCKET/runs" 2>/dev/null | grep -q '^\* step-1 '; then
	cat > seed.sh <<'SH'
mkdir "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp"
head -c 3145728 /dev/urandom > "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp/weights.bin"
mv "$RESUME_RUN_CHECKPOINT_DIR/.step-1.tmp" "$RESUME_RUN_CHECKPOINT_DIR/step-1"
SH
	run_rr seed.log --store "s3://$S3_BUCKET/runs" -- sh seed.sh
	expect_eq "$RC" 0 "exit status of the seeding run"
fi
# A machine told to go while it restores has work left: the preempted status (75), like one
# told to go while it waits to restart a failed trainer; 128+N with --preempted-exit-code 0.
for c in "INT $RR_PREEMPTED $RR_PREEMPTED" "TERM $RR_PREEMPTED $RR_PREEMPTED" "TERM 0 143"; do
	read -r sig pec want <<< "$c"
	rm -rf .resume-run/checkpoints "started-$sig"
	stalls=$(grep -c '^stalled GET .*/chunks/' proxy.log || true)
	touch STALL
	STARTED_FILE="$W/started-$sig" "$RR_BIN" --preempted-exit-code "$pec" --store "s3://$S3_BUCKET/runs" \
		-- sh started.sh > "restore-$sig.log" 2>&1 &
	agent=$!
	LEFT_PIDS+=("$agent")
	more_stalls() { [ "$(grep -c '^stalled GET .*/chunks/' proxy.log || true)" -gt "$stalls" ]; }
	wait_for 30 more_stalls || fail "SIG$sig: the restore never reached a chunk"
	sleep 0.3
	t0=$(date +%s%N)
	kill -"$sig" $agent
	for _ in $(seq 200); do alive $agent || break; sleep 0.05; done
	if alive $agent; then kill -9 $agent; fail "SIG$sig: the agent was still restoring 10 s after the signal"; fi
	set +e; wait $agent; rc=$?; set -e
	ms=$((($(date +%s%N) - t0) / 1000000))
	expect_eq "$rc" "$want" "SIG$sig during the restore (--preempted-exit-code $pec): exit status"
	[ ! -e "started-$sig" ] || fail "SIG$sig: the trainer was started after the signal"
	left=$(ls -A .resume-run/checkpoints 2>/dev/null | grep -v '^\.resume-run-staging$' || true)
	[ -z "$left" ] || fail "SIG$sig: left in the checkpoint dir: $left"
	expect_grep "SIG$sig during the restore" "restore-$sig.log" "SIG$sig: said why"
	rm -f STALL
	ok "SIG$sig during a stalled restore (--preempted-exit-code $pec): exit $rc after $ms ms, trainer never started, nothing half-restored left"
done
# A drill file created while the start-up restore runs is a notice once the trainer starts,
# not a leftover of an earlier drill (only one there before the agent started is).
rm -rf .resume-run/checkpoints drill-r
stalls=$(grep -c '^stalled GET .*/chunks/' proxy.log || true)
touch STALL
"$RR_BIN" --store "s3://$S3_BUCKET/runs" --drill-file "$W/drill-r" -- sleep 30 > restore-drill.log 2>&1 &
agent=$!
LEFT_PIDS+=("$agent")
wait_for 30 more_stalls || fail "drill: the restore never reached a chunk"
# (sleep has no handler for the request: the deadline's SIGTERM ends it)
echo '{"kind":"preempt","deadline_in":2}' > drill-r
rm -f STALL
for _ in $(seq 900); do alive $agent || break; sleep 0.05; done
if alive $agent; then kill -9 $agent; fail "drill: the agent still ran 45 s on: $(cat restore-drill.log)"; fi
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" "$RR_PREEMPTED" "drill file created during the restore: exit status"
expect_no_grep 'already exists at start' restore-drill.log "drill: not taken for a leftover"
expect_grep 'notice: preempt from file' restore-drill.log "drill: the notice"
ok "a drill file created during the start-up restore is a notice once the trainer runs"
fi

# --- 3. the trainer's leftovers: gone after the restart and after the agent exits ---
if want 3; then
cat > leftovers.sh <<'SH'
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed -E 's/.*\) ([A-Z]).*/\1/' "/proc/$1/stat")" != Z ]; }
case "$RESUME_RUN_ATTEMPT" in
0)
	sleep 300 & echo $! > bg0-group
	setsid sleep 301 & echo $! > bg0-session
	exit 1 ;;
1)
	for f in bg0-group bg0-session; do
		if alive "$(cat $f)"; then echo "$f alive" >> seen-by-1; else echo "$f gone" >> seen-by-1; fi
	done
	sleep 302 & echo $! > bg1-group
	setsid sleep 303 & echo $! > bg1-session
	exit 0 ;;
esac
SH
run_rr left.log --store "file://$W/s-left" --checkpoint-dir "$W/c-left" --max-restarts 1 -- sh leftovers.sh
for f in bg0-group bg0-session bg1-group bg1-session; do LEFT_PIDS+=("$(cat $f)"); done
expect_eq "$RC" 0 "exit status of the leftovers run"
expect_eq "$(tr '\n' ' ' < seen-by-1)" "bg0-group gone bg0-session gone " "attempt 1 found attempt 0's background processes"
for f in bg1-group bg1-session; do
	gone "$(cat $f)" || fail "$f ($(cat $f)) outlived the agent"
done
ok "a failed trainer's background sleep (in its group and in its own session) is gone before the restart; the last attempt's are gone when the agent exits"
fi

# --- 4. the agent SIGKILLed: the trainer gets its death signal ---
if want 4; then
cat > orphan.py <<'PY'
import os, signal, sys, time
def on_term(s, f):
    open("orphan-got-term", "w").close()
    sys.exit(143)
signal.signal(signal.SIGTERM, on_term)
with open("orphan.pid", "w") as f:
    f.write(str(os.getpid()))
time.sleep(120)
PY
"$RR_BIN" --store "file://$W/s-orphan" --checkpoint-dir "$W/c-orphan" -- "$PY" orphan.py > orphan.log 2>&1 &
agent=$!
LEFT_PIDS+=("$agent")
wait_for 20 test -s orphan.pid || fail "the orphan trainer did not start"
tpid=$(cat orphan.pid)
LEFT_PIDS+=("$tpid")
kill -9 $agent
wait $agent 2>/dev/null || true
wait_for 10 gone "$tpid" || fail "the trainer ($tpid) keeps running after the agent was SIGKILLed"
[ -e orphan-got-term ] || fail "the trainer died, but not by its SIGTERM handler"
ok "agent SIGKILLed: the trainer got SIGTERM (parent-death signal) and ended"
fi

# --- 5. secrets: agent not dumpable, core limit 0; the trainer gets its own back ---
if want 5; then
# As root the owner of /proc/PID/* would be root either way: the agent runs as nobody then.
mkdir -p "$W/priv"
if [ "$(id -u)" = 0 ]; then
	chmod o+x "$W"
	chown nobody "$W/priv" && chmod 700 "$W/priv"
	RUNAS=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	want_uid=65534
else
	RUNAS=()
	want_uid=$(id -u)
fi
cat > "$W/priv/dump.py" <<'PY'
import ctypes, os, time
libc = ctypes.CDLL(None)
PR_GET_DUMPABLE = 3
core = [l for l in open("/proc/self/limits") if l.startswith("Max core file size")][0].split()
with open("trainer-dump.txt.tmp", "w") as f:
    f.write(f"dumpable={libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)} core_soft={core[4]}\n")
os.rename("trainer-dump.txt.tmp", "trainer-dump.txt")
while not os.path.exists("done"):
    time.sleep(0.05)
PY
(
	cd "$W/priv"
	ulimit -c 4096
	# An ASan build would zero the core limit itself before main (disable_coredump).
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}disable_coredump=0"
	exec "${RUNAS[@]}" "$RR_BIN" --store "file://$W/priv/s" \
		--checkpoint-dir "$W/priv/c" -- "$PY" dump.py
) > dump.log 2>&1 &
agent=$!
LEFT_PIDS+=("$agent")
wait_for 20 test -s "$W/priv/trainer-dump.txt" || fail "the dump trainer did not start: $(cat dump.log)"
agent_uid=$(awk '/^Uid:/ {print $2}' /proc/$agent/status)
expect_eq "$agent_uid" "$want_uid" "the agent's user"
# A process that is not dumpable has the files in its /proc/PID owned by root.
expect_eq "$(stat -c %u /proc/$agent/status)" 0 "owner of /proc/AGENT/status (root when not dumpable)"
agent_core=$(awk '/^Max core file size/ {print $5}' /proc/$agent/limits)
expect_eq "$agent_core" 0 "the agent's core-file soft limit"
expect_eq "$(cat "$W/priv/trainer-dump.txt")" "dumpable=1 core_soft=4194304" "the trainer's dumpable flag and core limit"
touch "$W/priv/done"
set +e; wait $agent; rc=$?; set -e
expect_eq "$rc" 0 "exit status of the dump run"
ok "agent not dumpable (/proc/PID/status owned by root while it runs as uid $want_uid), core soft limit 0; trainer dumpable with the 4 MiB core limit it was started with"
fi

# --- 6. --trainer-env strip|pass ---
if want 6; then
CRED_VARS="AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE GOOGLE_APPLICATION_CREDENTIALS RESUME_RUN_ENCRYPTION_KEY_FILE"
cat > envdump.sh <<'SH'
env > "$ENV_OUT"
SH
# The agent reads the key file itself (an encrypted store of its own), so it must be real.
printf '%064d\n' 7 > "$W/env.key"
chmod 600 "$W/env.key"
for mode in pass strip; do
	ENV_OUT="$W/env-$mode.txt" AWS_SESSION_TOKEN=sess AWS_CONTAINER_AUTHORIZATION_TOKEN=ctok \
		AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=/nonexistent GOOGLE_APPLICATION_CREDENTIALS=/nonexistent.json \
		RESUME_RUN_ENCRYPTION_KEY_FILE="$W/env.key" SOME_TRAINER_SETTING=kept \
		run_rr "env-$mode.log" --store "file://$W/s-env-sealed" --checkpoint-dir "$W/c-env-$mode" --trainer-env $mode -- sh envdump.sh
	expect_eq "$RC" 0 "exit status with --trainer-env $mode"
	expect_grep '^SOME_TRAINER_SETTING=kept$' "env-$mode.txt" "$mode: other variables pass"
	for v in $CRED_VARS; do
		if [ $mode = pass ]; then expect_grep "^$v=" "env-$mode.txt" "pass: $v reaches the trainer"
		else expect_no_grep "^$v=" "env-$mode.txt" "strip: $v kept from the trainer"; fi
	done
done
ENV_OUT="$W/env-var.txt" RESUME_RUN_TRAINER_ENV=strip run_rr env-var.log --store "file://$W/s-env" --checkpoint-dir "$W/c-env" -- sh envdump.sh
expect_eq "$RC" 0 "exit status with RESUME_RUN_TRAINER_ENV=strip"
expect_no_grep '^AWS_SECRET_ACCESS_KEY=' env-var.txt "RESUME_RUN_TRAINER_ENV=strip"
# The agent keeps its own: with strip, an S3 run still persists.
cat > envs3.sh <<'SH'
env > "$ENV_OUT"
mkdir "$RESUME_RUN_CHECKPOINT_DIR/.step-7.tmp"
echo weights > "$RESUME_RUN_CHECKPOINT_DIR/.step-7.tmp/w.bin"
mv "$RESUME_RUN_CHECKPOINT_DIR/.step-7.tmp" "$RESUME_RUN_CHECKPOINT_DIR/step-7"
SH
ENV_OUT="$W/env-s3.txt" run_rr env-s3.log --store "s3://$S3_BUCKET/strip" --checkpoint-dir "$W/c-env-s3" --trainer-env strip -- sh envs3.sh
expect_eq "$RC" 0 "exit status of the S3 run with --trainer-env strip"
expect_no_grep '^AWS_SECRET_ACCESS_KEY=' env-s3.txt "strip on S3"
"$RR_BIN" ls --store "s3://$S3_BUCKET/strip" > ls-strip.out 2>&1 || fail "ls: $(cat ls-strip.out)"
expect_grep '^\* step-7 +committed' ls-strip.out "step-7 durable in S3 with the trainer's credentials stripped"
ok "--trainer-env pass hands the trainer all of $CRED_VARS; strip (and RESUME_RUN_TRAINER_ENV=strip) none of them (and an S3 run with strip still persists)"
fi

# --- 7. a Google token over plain http only to loopback ---
if want 7; then
"$PY" - <<'PY'
import json
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
pem = k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                      serialization.NoEncryption()).decode()
json.dump({"type": "service_account", "client_email": "t@example.iam.gserviceaccount.com",
           "private_key": pem, "token_uri": "https://oauth2.googleapis.com/token"}, open("sa.json", "w"))
PY
set +e
STORAGE_EMULATOR_HOST=http://10.255.255.1:9 GOOGLE_APPLICATION_CREDENTIALS="$W/sa.json" \
	timeout 20 "$RR_BIN" ls --store gs://bucket/runs > gs-http.log 2>&1
rc=$?
set -e
expect_eq "$rc" 125 "exit status of gs:// over http to a non-loopback host"
expect_grep 'plain http' gs-http.log "the refusal says why"
ok "gs:// with STORAGE_EMULATOR_HOST=http://10.255.255.1:9 and an OAuth key: refused before any token is sent ($(grep -o 'refus.*' gs-http.log | head -c 120))"
fi

finish
