#!/usr/bin/env bash
# Files closed in a committed checkpoint after its commit never vanish without a word:
# transformers 4.3x wrote rng_state.pth 0.2 s after trainer_state.json, the marker that commits
# checkpoint-N, and the store's copy went without it. A checkpoint written in place is let
# settle before it is read, so such a file is persisted with it; one written later still is
# named in a warning, and a restore shows what the store holds.
. "$(dirname "$0")/lib.sh"

# An HF-like trainer: checkpoint-N/ written in place, trainer_state.json closed, then
# rng_state.pth LATE seconds later; then the next checkpoint, or exit.
cat > hf_like.py <<'PY'
import os, sys, time
late, steps = float(sys.argv[1]), int(sys.argv[2])
ck = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
for n in range(1, steps + 1):
    d = os.path.join(ck, "checkpoint-%d" % n)
    os.makedirs(d)
    with open(os.path.join(d, "model.bin"), "wb") as f:
        f.write(os.urandom(4096))
    with open(os.path.join(d, "trainer_state.json"), "w") as f:
        f.write('{"global_step": %d}' % n)
    print("marker of checkpoint-%d closed" % n, flush=True)
    time.sleep(late)
    with open(os.path.join(d, "rng_state.pth"), "wb") as f:
        f.write(b"rng state of step %d" % n)
    print("rng_state.pth of checkpoint-%d written" % n, flush=True)
    time.sleep(0.5)
PY

# --- 1. rng_state.pth 0.2 s after the marker: in the stored checkpoint ---
run_rr a.log --store "file://$W/store" --checkpoint-dir "$W/ck-a" -- "$PY" hf_like.py 0.2 1
expect_eq "$RC" 0 "trainer 1: exit status"
expect_grep "checkpoint-1: 1 file written after its commit; waited [0-9.]+ s for it to be quiet" a.log \
	"the wait for the late file is said"
run_rr restore-a.log restore --store "file://$W/store" --to "$W/back-a"
expect_eq "$RC" 0 "restore: exit status"
[ -f "$W/back-a/checkpoint-1/rng_state.pth" ] ||
	fail "rng_state.pth, closed 0.2 s after the marker, is not in the stored checkpoint-1"
expect_eq "$(cat "$W/back-a/checkpoint-1/rng_state.pth")" "rng state of step 1" "the restored rng_state.pth"
ok "a file closed 0.2 s after the marker is persisted with its checkpoint"

# --- 2. A file 3 s after the marker, past the settling: named, not silently dropped ---
run_rr b.log --store "file://$W/store-b" --checkpoint-dir "$W/ck-b" -- "$PY" hf_like.py 3 2
expect_eq "$RC" 0 "trainer 2: exit status"
expect_grep "checkpoint \"checkpoint-1\": \"rng_state.pth\" was written after the checkpoint was persisted, and the store's copy does not hold it" \
	b.log "the late file of checkpoint-1 is named"
expect_grep "checkpoint \"checkpoint-2\": \"rng_state.pth\" was written after the checkpoint was persisted" \
	b.log "the late file of the last checkpoint is named when the agent leaves"
ok "a file written after its checkpoint was persisted is named in a warning"

# --- 3. DeepSpeed: rank 0 writes `latest` before the other ranks finish their shards (no
# barrier between: engine.save_checkpoint). Rank 1's shard is still being written 13 s after
# `latest`: the persist waits while it changes (it stopped waiting 10 s after the commit and
# stored the shard half-written, as the newest checkpoint) ---
cat > ds_like.py <<'PY'
import os, time
ck = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
d = os.path.join(ck, "global_step10")
os.makedirs(d)
with open(os.path.join(d, "zero_pp_rank_0_mp_rank_00_optim_states.pt"), "wb") as f:
    f.write(os.urandom(65536))
slow = open(os.path.join(d, "zero_pp_rank_1_mp_rank_00_optim_states.pt"), "wb")
slow.write(os.urandom(4096))
slow.flush()
with open(os.path.join(ck, "latest"), "w") as f:
    f.write("global_step10")
print("latest written", flush=True)
for _ in range(26):  # rank 1 goes on for 13 s
    time.sleep(0.5)
    slow.write(os.urandom(4096))
    slow.flush()
slow.close()
print("rank 1 done", flush=True)
time.sleep(3)
PY
run_rr d.log --store "file://$W/store-d" --checkpoint-dir "$W/ck-d" -- "$PY" ds_like.py
expect_eq "$RC" 0 "trainer 3: exit status"
expect_no_grep "after the checkpoint was persisted" d.log "nothing written after the persist"
run_rr restore-d.log restore --store "file://$W/store-d" --to "$W/back-d"
expect_eq "$RC" 0 "restore: exit status"
cmp -s "$W/ck-d/global_step10/zero_pp_rank_1_mp_rank_00_optim_states.pt" \
	"$W/back-d/global_step10/zero_pp_rank_1_mp_rank_00_optim_states.pt" ||
	fail "rank 1's shard, written for 13 s after latest, is not whole in the store"
ok "a shard still written 13 s after latest is persisted whole"

# --- 4. A checkpoint committed by a rename is complete: no wait, no warning ---
run_rr c.log --store "file://$W/store-c" --checkpoint-dir "$W/ck-c" -- "$PY" "$TRAINER" --steps 100 --step-time 0 --checkpoint-every 50
expect_eq "$RC" 0 "trainer 4: exit status"
expect_no_grep "written after its commit|after the checkpoint was persisted" c.log "renamed checkpoints"
ok "renamed checkpoints: no wait, no warning"
finish
