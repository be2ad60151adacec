#!/usr/bin/env bash
# A trainer is outside input (issue 12, the filesystem half). The agent runs as root and the
# trainer as nobody (setpriv), as in a container whose entrypoint is the agent: whatever the
# trainer plants in its checkpoint directory must not make the agent delete, upload or block
# on anything the trainer could not reach itself. Cases that need the two users are skipped,
# with a line saying so, when the test does not run as root.
. "$(dirname "$0")/lib.sh"

chmod 0755 "$W" # the trainer (nobody) reaches its checkpoint dir and the agent's log
if [ "$(id -u)" = 0 ]; then
	AS_TRAINER=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	ROOT=1
else
	AS_TRAINER=()
	ROOT=0
	echo "note: not root: the cases where privilege matters (staging symlink, checkpoint"
	echo "      swapped for a symlink, store permissions against the trainer) are SKIPPED"
fi

# The hostile trainer: commits checkpoints the way the contract says (write a dot-name,
# rename it), plus one hostile act per mode. Self-contained: nobody may not read scripts/.
cat >"$W/hostile.py" <<'PY'
import os, struct, sys, time

mode = sys.argv[1]
ck = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
log = os.environ.get("AGENT_LOG", "")


def commit(name, files):
    tmp = os.path.join(ck, "." + name.replace("\n", "_") + ".tmp")
    os.makedirs(tmp)
    for rel, data in files.items():
        p = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    os.rename(tmp, os.path.join(ck, name))


def wait_log(text, limit=60):
    end = time.time() + limit
    while time.time() < end:
        with open(log, errors="replace") as f:
            if text in f.read():
                return
        time.sleep(0.005)
    sys.exit(f"never saw {text!r} in the agent's log")


def f32_safetensors(n):
    vals = struct.pack(f"<{n}f", *[0.001 * i + 0.123456789 for i in range(n)])
    hdr = ('{"w":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}' % (n, 4 * n)).encode()
    hdr += b" " * (-len(hdr) % 8)
    return struct.pack("<Q", len(hdr)) + hdr + vals


if mode == "staging":
    # Where older agents staged hard links: a symlink to a directory the trainer cannot
    # delete from (root's), holding a directory named like the checkpoint.
    os.symlink(sys.argv[2], os.path.join(ck, ".resume-run-staging"))
    commit("step-1", {"model.bin": b"weights\n" * 1000})
elif mode == "dirswap":
    # step-1 keeps the persister busy; step-2 waits in the queue and, once the agent has
    # seen its commit, becomes a symlink to a directory only root can read.
    commit("step-1", {"big.bin": os.urandom(96 << 20)})
    wait_log("persisting step-1")  # else step-2 could replace it in the queue
    commit("step-2", {"model.bin": b"weights\n" * 1000})
    wait_log("checkpoint step-2 committed")
    os.rename(os.path.join(ck, "step-2"), os.path.join(ck, ".step-2.moved"))
    os.symlink(sys.argv[2], os.path.join(ck, "step-2"))
elif mode == "fifoswap":
    # A regular file where older agents staged made them read in place; then, while the
    # big file is being read, the small one (read last) is swapped for a FIFO.
    open(os.path.join(ck, ".resume-run-staging"), "w").close()
    commit("step-1", {"a.bin": os.urandom(96 << 20), "z.bin": b"small\n"})
    wait_log("persisting step-1")
    z = os.path.join(ck, "step-1", "z.bin")
    os.unlink(z)
    os.mkfifo(z)
elif mode == "names":
    # One at a time: a newer commit would replace step-1 in the persist queue.
    commit("step-1", {"ok.txt": b"fine\n", "tok\\en.json": b"{}\n"})
    wait_log("is not persisted")
    commit("step-2\nresume-run: error: forged", {"ok.txt": b"fine\n"})
    commit("step-3", {"ok.txt": b"fine\n"})
elif mode == "plain":
    commit("step-1", {"model.bin": b"weights\n" * 1000})
    time.sleep(1)
elif mode == "lossy":
    if os.environ.get("RESUME_RUN_RESTORE_DIR"):
        sys.exit(0)  # restored: nothing more to do
    commit("step-1", {"model.safetensors": f32_safetensors(300000), "meta.json": b"{}\n"})
else:
    sys.exit(f"unknown mode {mode}")
PY

# new_ckpt DIR: a checkpoint dir the trainer owns.
new_ckpt() {
	mkdir -p "$1"
	[ $ROOT = 0 ] || chown nobody:nogroup "$1"
}

# agent LOG CKPT_DIR [OPTIONS...] -- MODE [ARGS...]: the agent as root, the trainer as
# nobody; bounded, so an agent that blocks fails the test instead of hanging it.
agent() {
	local log=$1 ck=$2; shift 2
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	: >"$log"
	set +e
	AGENT_LOG="$W/$log" timeout -k 5 120 "$RR_BIN" --store "file://$STORE" \
		--checkpoint-dir "$ck" "${opts[@]}" -- "${AS_TRAINER[@]}" "$PY" "$W/hostile.py" "$@" \
		>"$log" 2>&1
	RC=$?
	set -e
}
# Each case has a store of its own (the agent creates it).
manifest() { echo "$STORE/default/checkpoints/$1/manifest.json"; }

# 1. A staging symlink planted by the trainer is never followed: root's directory behind it
#    keeps its contents, and nothing is linked into it.
if [ $ROOT = 1 ]; then
	mkdir -p "$W/rootdir/step-1"
	echo "root's" >"$W/rootdir/step-1/precious.txt"
	STORE=$W/store1
	new_ckpt "$W/c1"
	agent staging.log "$W/c1" -- staging "$W/rootdir"
	expect_eq "$RC" 0 "staging: agent status"
	[ -f "$W/rootdir/step-1/precious.txt" ] || fail "the agent deleted root's file behind the staging symlink"
	expect_eq "$(ls -A "$W/rootdir/step-1")" "precious.txt" "nothing linked into root's directory"
	[ -f "$(manifest step-1)" ] || fail "step-1 was not persisted"
	ok "a staging symlink planted by the trainer is not followed (root's directory intact)"
else
	echo "SKIP: staging symlink case (needs root)"
fi

# 2. A committed checkpoint swapped for a symlink while it waits in the persist queue: what
#    the link points to (a directory only root can read) never reaches the store.
if [ $ROOT = 1 ]; then
	mkdir -m 0700 "$W/secret"
	echo "TOP-SECRET-KEY" >"$W/secret/key.pem"
	STORE=$W/store2
	new_ckpt "$W/c2"
	agent dirswap.log "$W/c2" -- dirswap "$W/secret"
	expect_eq "$RC" 0 "dirswap: agent status"
	[ -f "$(manifest step-1)" ] || fail "step-1 was not persisted"
	if [ -f "$(manifest step-2)" ]; then
		! grep -q key.pem "$(manifest step-2)" || fail "the secret behind the symlink was uploaded"
	fi
	expect_grep 'checkpoint "step-2" is not persisted: it is no longer a directory' dirswap.log \
		"the swapped checkpoint is refused with a warning"
	ok "a checkpoint swapped for a symlink after its commit is not uploaded"

	# The store the agent made is private: the trainer cannot read back what was stored.
	[ -z "$(find "$STORE" -type f ! -perm 0600)" ] || fail "store files not 0600: $(find "$STORE" -type f ! -perm 0600 | head -3)"
	[ -z "$(find "$STORE" -type d ! -perm 0700)" ] || fail "store dirs not 0700"
	chunk=$(find "$STORE/default/chunks" -type f | head -1)
	if "${AS_TRAINER[@]}" cat "$chunk" >/dev/null 2>&1; then
		fail "the trainer can read the store's chunks"
	fi
	ok "file:// store objects are 0600 in 0700 directories; the trainer cannot read them"
else
	echo "SKIP: checkpoint swapped for a symlink, store permissions (need root)"
fi

# 3. A file swapped for a FIFO after the listing: the persist neither blocks nor reads the
#    FIFO (the file held open since the listing is what is stored), and the agent exits.
STORE=$W/store3
new_ckpt "$W/c3"
agent fifoswap.log "$W/c3" -- fifoswap
[ "$RC" != 124 ] && [ "$RC" != 137 ] || fail "the agent blocked on a FIFO swapped into the checkpoint"
expect_eq "$RC" 0 "fifoswap: agent status"
# Depending on when the swap lands: z.bin held open before it (stored as it was), the FIFO
# seen by the listing (skipped, with a warning), or the persist refused with its reason.
if [ -f "$(manifest step-1)" ]; then
	grep -q z.bin "$(manifest step-1)" || \
		expect_grep 'entries that are not regular files' fifoswap.log "the FIFO skipped"
else
	expect_grep 'persist of "step-1" failed' fifoswap.log "step-1 refused with a reason"
fi
ok "a FIFO swapped into a checkpoint does not block the persister or the agent's exit"

# 4. Names the reader refuses are refused at commit, with one warning each, never
#    "persisted"; gc still reads every manifest; a newline cannot forge a log line.
STORE=$W/store4
new_ckpt "$W/c4"
agent names.log "$W/c4" -- names
expect_eq "$RC" 0 "names: agent status"
expect_grep 'checkpoint "step-1" is not persisted: restore refuses the name of its file "tok\\\\en.json"' \
	names.log "backslash file refused"
expect_grep 'checkpoint "step-2\\u000aresume-run: error: forged" is not persisted' names.log \
	"newline name refused"
expect_no_grep '^resume-run: error: forged' names.log "no forged log line"
[ ! -f "$(manifest step-1)" ] || fail "step-1 (with a backslash file) was persisted"
[ -f "$(manifest step-3)" ] || fail "step-3 was not persisted"
expect_eq "$(ls "$STORE/default/checkpoints")" "step-3" "only step-3 in the store"
run_rr gc.log gc --store "file://$STORE"
expect_eq "$RC" 0 "gc"
expect_no_grep 'could not be read' gc.log "gc reads every manifest"
ok "names restore would refuse are refused at commit; gc unaffected; no forged log line"

# 5. A FIFO as --drill-file (the README's example path is in /tmp, where anyone can make
#    one) is refused with one warning; the event loop goes on: commits persist, exit 0.
mkfifo "$W/notice.fifo"
chmod 0666 "$W/notice.fifo"
STORE=$W/store5
new_ckpt "$W/c5"
agent notice.log "$W/c5" --drill-file "$W/notice.fifo" -- plain
[ "$RC" != 124 ] && [ "$RC" != 137 ] || fail "the agent blocked on a FIFO notice file"
expect_eq "$RC" 0 "notice fifo: agent status"
expect_eq "$(grep -c 'is not a regular file' notice.log)" 1 "one warning"
[ -f "$(manifest step-1)" ] || fail "step-1 was not persisted"
ok "a FIFO as --drill-file is refused once and blocks nothing"

# 6. A checkpoint restored from lossy (FP16) chunks, started again on the same directory:
#    nothing is copied and no ".step-1.local-<ms>" copy is left behind.
STORE=$W/store6
new_ckpt "$W/c6a"
agent lossy1.log "$W/c6a" --precision fp16 -- lossy
expect_eq "$RC" 0 "lossy: first run"
expect_grep 'step-1 tensors: 1 fp16' lossy1.log "stored as fp16"
new_ckpt "$W/c6b"
agent lossy2.log "$W/c6b" -- lossy
expect_eq "$RC" 0 "lossy: restore run"
expect_grep 'restored step-1' lossy2.log "restored"
agent lossy3.log "$W/c6b" -- lossy
expect_eq "$RC" 0 "lossy: second start"
expect_grep 'step-1 is already here and identical; nothing copied' lossy3.log "nothing copied"
expect_eq "$(ls -A "$W/c6b" | grep -c 'local-' || true)" 0 "no aside copy"
# A local edit: restored again, and the old copy does not pile up either.
printf '\377\377\377\377' | dd of="$W/c6b/step-1/model.safetensors" bs=1 seek=200 conv=notrunc status=none
agent lossy4.log "$W/c6b" -- lossy
expect_eq "$RC" 0 "lossy: start after a local edit"
expect_grep 'restored step-1' lossy4.log "restored again after the edit"
expect_eq "$(ls -A "$W/c6b" | grep -c 'local-' || true)" 0 "no aside copy after a replace"
ok "a lossy-restored checkpoint is recognised at the next start; no aside copies remain"
finish
