#!/usr/bin/env bash
# Multi-node restore (docs/how-it-works.md, "Multi-node") on a file store, with shell trainers:
# a node whose checkpoint directory had no files stored a valid, empty part, and every node
# restores that checkpoint; a node that finds its part of the newest checkpoint damaged does
# not fall back alone (the nodes would resume from different steps) but marks it suspect for
# every node and fails this start; relaunched, every node restores the one before.
. "$(dirname "$0")/lib.sh"

export RESUME_RUN_STORE="file://$W/store"

# trainer.sh RUN RANK NAME[:empty]...: commits each NAME by a rename (one file, or none with
# :empty) and waits for the agent to have stored it as this node's part before the next one,
# so that a newer commit does not replace it in the persist queue.
cat > "$W/trainer.sh" <<'EOF'
#!/bin/sh
set -eu
parts=$1/checkpoints rank=$2
shift 2
for spec in "$@"; do
	name=${spec%%:*}
	tmp="$RESUME_RUN_CHECKPOINT_DIR/.$name.tmp"
	mkdir "$tmp"
	[ "$spec" = "$name:empty" ] || echo "node $rank $name" > "$tmp/node$rank.txt"
	mv "$tmp" "$RESUME_RUN_CHECKPOINT_DIR/$name"
	i=0
	until [ -f "$parts/$name/parts/$rank.json" ]; do
		i=$((i + 1)); [ $i -lt 1200 ] || { echo "part $rank of $name never stored" >&2; exit 3; }
		sleep 0.05
	done
done
EOF

# node K LOG ARGS...: the agent of node K of 2 on a machine of its own (a checkpoint directory
# named after LOG), in the foreground.
node() {
	local k=$1 log=$2; shift 2
	mkdir -p "$W/$RESUME_RUN_ID"
	run_rr "$log" --nnodes 2 --node-rank "$k" --checkpoint-dir "$W/$RESUME_RUN_ID/${log%.log}" "$@"
}
# restore K DIR LOG: `resume-run restore` as node K of 2.
restore() {
	run_rr "$3" restore --nnodes 2 --node-rank "$1" --to "$2"
}
# shellcheck disable=SC2016 # expanded by the trainer's shell, in the trainer's environment
show_restored='echo "restored: ${RESUME_RUN_RESTORE_DIR:-none}"'

# --- a node with no files stores an empty part, and the checkpoint restores ---
export RESUME_RUN_ID=empty
node 0 e0.log -- sh "$W/trainer.sh" "$W/store/empty" 0 step-1
expect_eq "$RC" 0 "node 0 writing step-1"
node 1 e1.log -- sh "$W/trainer.sh" "$W/store/empty" 1 step-1:empty
expect_eq "$RC" 0 "node 1 writing an empty step-1"
expect_grep 'persisted step-1: 0 files' e1.log "node 1's part holds no file"
expect_grep 'step-1 committed: all 2 parts' e1.log "committed"
restore 0 "$W/er0" er0.log
expect_eq "$RC" 0 "restore of node 0's part"
restore 1 "$W/er1" er1.log
expect_eq "$RC" 0 "restore of node 1's empty part"
expect_eq "$(cat "$W/er0/step-1/node0.txt")" "node 0 step-1" "node 0's file"
[ -d "$W/er1/step-1" ] && [ -z "$(ls -A "$W/er1/step-1")" ] || fail "node 1's step-1 is not an empty directory"
for k in 0 1; do
	node "$k" es$k.log -- sh -c "$show_restored"
	expect_eq "$RC" 0 "node $k starting on step-1"
	expect_grep "restored: $W/empty/es$k/step-1\$" es$k.log "node $k's trainer got step-1"
done
# Still refused: a job of another node count.
run_rr e3.log restore --nnodes 3 --node-rank 2 --to "$W/er2"
expect_eq "$RC" 125 "a 3-node restore of the 2-node store"
expect_grep 'written by a job of 2 nodes; this agent runs with --nnodes 3' e3.log "the reason"
ok "an empty part is a part: both nodes restore step-1 (node 1 an empty directory); a 3-node job is refused"

# --- node 1's part of the newest checkpoint is damaged ---
export RESUME_RUN_ID=dmg
node 0 d0.log -- sh "$W/trainer.sh" "$W/store/dmg" 0 step-1 step-2
expect_eq "$RC" 0 "node 0 writing step-1 and step-2"
node 1 d1.log -- sh "$W/trainer.sh" "$W/store/dmg" 1 step-1 step-2
expect_eq "$RC" 0 "node 1 writing step-1 and step-2"
expect_grep 'step-2 committed: all 2 parts' d1.log "step-2 committed"
# A chunk of node 1's step-2 that no other part uses: one byte flipped.
chunk=$("$PY" - "$W/store/dmg/checkpoints" <<'PY'
import json, sys
def chunks(name, rank):
    m = json.load(open(f"{sys.argv[1]}/{name}/parts/{rank}.json"))
    return {c["sha256"] for f in m["files"] for s in f["segments"] for c in s["chunks"]}
print(sorted(chunks("step-2", 1) - chunks("step-2", 0) - chunks("step-1", 0) - chunks("step-1", 1))[0])
PY
)
f="$W/store/dmg/chunks/${chunk:0:2}/$chunk"
"$PY" -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0xff; open(p, "wb").write(b)' "$f"
# Node 0 restores its (intact) part before node 1 finds the damage.
restore 0 "$W/dr0" dr0.log
expect_eq "$RC" 0 "node 0's restore before the damage is found"
expect_grep 'restored step-2' dr0.log "node 0 restored step-2"
node 1 ds1.log -- sh -c "$show_restored"
expect_eq "$RC" 125 "node 1's start on the damaged step-2"
expect_grep 'checkpoint step-2 is DAMAGED' ds1.log "the damage said"
expect_grep 'marked suspect for every node: relaunch the job' ds1.log "one line saying what to do"
expect_no_grep 'falling back|restored: ' ds1.log "node 1 fell back alone"
[ -f "$W/store/dmg/checkpoints/step-2/suspect.json" ] || fail "step-2 not marked suspect"
expect_grep 'node 1 of 2' "$W/store/dmg/checkpoints/step-2/suspect.json" "the mark names the node"
ok "node 1 found its part of step-2 damaged: marked it suspect for every node, exit 125, no fallback alone"

# The job relaunched: every node passes step-2 over and restores step-1.
for k in 0 1; do
	node "$k" dl$k.log -- sh -c "$show_restored"
	expect_eq "$RC" 0 "node $k relaunched"
	expect_grep 'checkpoint step-2 is marked suspect .*passing it over' dl$k.log "node $k passed step-2 over"
	expect_grep "restored: $W/dmg/dl$k/step-1\$" dl$k.log "node $k's trainer got step-1"
	restore "$k" "$W/dl$k" dlr$k.log
	expect_eq "$RC" 0 "node $k's restore after the mark"
	expect_eq "$(cat "$W/dl$k/step-1/node$k.txt")" "node $k step-1" "node $k's step-1 file"
done
ok "relaunched, both nodes pass the suspect step-2 over and restore step-1"
finish
