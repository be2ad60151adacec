#!/usr/bin/env bash
# Multi-node (docs/how-it-works.md, "Multi-node"): two agents on loopback, each wrapping
# torchrun (one process per node) training a small DDP model (gloo, CPU) on S3 (SeaweedFS). A
# notice on node 1 only reaches node 0 through the store; both ranks checkpoint the same step;
# both machines are lost; two fresh nodes restore and finish bit-identical to an uninterrupted
# 2-node run. Then: node 1's agent SIGKILLed mid-persist leaves the previous committed
# checkpoint.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"

DDP="$RR_SRC/tests/integration/trainers/ddp_trainer.py"
"$PY" -c 'import torch.distributed' 2>/dev/null || fail "python3-torch is not installed"
start_s3
s3_env
export RESUME_RUN_STORE="s3://$S3_BUCKET/runs"
STEPS=120

# torchrun on node K: "--redirects 1 --tee 1" (Debian torch 1.13's launcher crashes under
# Python 3.11 with the defaults).
torchrun_args() { # K PORT TRAINER-ARGS...
	local k=$1 port=$2; shift 2
	echo "$PY -m torch.distributed.run --nnodes 2 --node_rank $k --nproc_per_node 1" \
	     "--master_addr 127.0.0.1 --master_port $port --redirects 1 --tee 1 $DDP $*"
}

# agent K PORT LOG EXTRA-AGENT-ARGS -- TRAINER-ARGS: one node, in the background (PID_K).
agent() {
	local k=$1 port=$2 log=$3; shift 3
	local extra=()
	while [ "$1" != "--" ]; do extra+=("$1"); shift; done
	shift
	mkdir -p "$W/node$k"
	# shellcheck disable=SC2046
	( cd "$W/node$k" && exec "$RR_BIN" --nnodes 2 --node-rank "$k" --precision exact \
		--checkpoint-dir "$W/node$k/ckpt" "${extra[@]}" -- $(torchrun_args "$k" "$port" "$@") \
		>"$W/$log" 2>&1 ) &
	eval "PID_$k=$!"
}

# --- the uninterrupted reference: two nodes, no agent ---
port=$(free_port)
refs=()
for k in 0 1; do
	(
		# shellcheck disable=SC2046,SC2091 # torchrun_args prints the command line to run
		RESUME_RUN_CHECKPOINT_DIR="$W/ref$k" $(torchrun_args $k "$port" --steps $STEPS --out "$W/ref$k.json") \
			>"$W/ref$k.log" 2>&1
	) &
	refs+=($!)
done
wait "${refs[@]}" # not the S3 server
for k in 0 1; do [ -f "$W/ref$k.json" ] || fail "reference run of node $k did not finish"; done
ok "reference: an uninterrupted 2-node DDP run"

# --- a notice on node 1 only ---
export RESUME_RUN_ID=mn
port=$(free_port)
agent 0 "$port" a0.log -- --steps $STEPS --step-time 0.1 --checkpoint-every 20 --out "$W/a0.json"
agent 1 "$port" a1.log --drill-file "$W/NOTICE" -- --steps $STEPS --step-time 0.1 --checkpoint-every 20 --out "$W/a1.json"
wait_for 120 test -d "$W/node1/ckpt/step-20" || fail "node 1 never checkpointed step-20"
wait_for 30 grep -q "committed: all 2 parts" "$W/a0.log" "$W/a1.log" || fail "step-20 was never committed"
t_notice=$(date +%s.%N)
touch "$W/NOTICE"
wait_for 30 grep -q "notice from another node" "$W/a0.log" || fail "node 0's agent never heard of node 1's notice"
t_heard=$(date +%s.%N)
set +e; wait "$PID_0"; rc0=$?; wait "$PID_1"; rc1=$?; set -e
latency=$("$PY" -c "print('%.2f' % ($t_heard - $t_notice))")
expect_eq "$rc0" "${RR_PREEMPTED:-0}" "node 0 agent exit status"
expect_eq "$rc1" "${RR_PREEMPTED:-0}" "node 1 agent exit status"
s0=$(sed -nE 's/.*rank 0 checkpointed at step ([0-9]+), exiting.*/\1/p' "$W/a0.log")
s1=$(sed -nE 's/.*rank 1 checkpointed at step ([0-9]+), exiting.*/\1/p' "$W/a1.log")
[ -n "$s0" ] && [ -n "$s1" ] || fail "a trainer did not checkpoint on the notice (s0='$s0' s1='$s1')"
expect_eq "$s0" "$s1" "the step both ranks checkpointed"
expect_grep "asking the trainer|notice" "$W/a0.log" "node 0 signalled its trainer"
"$RR_BIN" ls > "$W/ls.out" 2>&1 || fail "ls: $(cat "$W/ls.out")"
expect_grep "^\* step-$s0 +committed" "$W/ls.out" "ls shows step-$s0 committed and LATEST"
s3cli s3 ls "s3://$S3_BUCKET/runs/mn/notices/" > "$W/notices.out"
expect_grep "node1\.json" "$W/notices.out" "node 1's notice in the store"
ok "notice on node 1 reached node 0 in ${latency}s; both ranks checkpointed step-$s0; committed"
echo "# fan-out latency (notice file on node 1 -> node 0's agent takes it): ${latency}s"

# --- both machines lost; two fresh nodes ---
rm -rf "$W/node0" "$W/node1" "$W/NOTICE"
port=$(free_port)
agent 0 "$port" b0.log -- --steps $STEPS --out "$W/b0.json"
agent 1 "$port" b1.log -- --steps $STEPS --out "$W/b1.json"
set +e; wait "$PID_0"; rc0=$?; wait "$PID_1"; rc1=$?; set -e
expect_eq "$rc0" 0 "fresh node 0"
expect_eq "$rc1" 0 "fresh node 1"
for k in 0 1; do
	expect_grep "restored step-$s0" "$W/b$k.log" "node $k restored step-$s0"
	expect_eq "$(json_field "$W/b$k.json" sha256)" "$(json_field "$W/ref$k.json" sha256)" "node $k final weights"
	expect_eq "$(json_field "$W/b$k.json" loss_history_sha256)" "$(json_field "$W/ref$k.json" loss_history_sha256)" "node $k loss history"
done
ok "fresh nodes restored step-$s0 (each its own part) and finished bit-identical to the reference"

# --- a store of another --nnodes is refused ---
mkdir -p "$W/solo" && cd "$W/solo"
run_rr "$W/solo.log" --checkpoint-dir "$W/solo/ckpt" -- true
expect_eq "$RC" 125 "a single-node agent on a 2-node store"
expect_grep "2-node job|--nnodes 1" "$W/solo.log" "the reason"
cd "$W"
ok "a single-node agent on the 2-node store exits 125 with a clear line"

# --- node 1's agent SIGKILLed mid-persist ---
# A process and all its descendants, by parent PID (the agent, torchrun, the worker).
tree() { local c; echo "$1"; for c in $(pgrep -P "$1"); do tree "$c"; done; }
rm -rf "$W/node0" "$W/node1"
export RESUME_RUN_ID=mn-kill
port=$(free_port)
agent 0 "$port" k0.log -- --steps $STEPS --step-time 0.1 --checkpoint-every 20 --ballast-mb 24 --out "$W/k0.json"
agent 1 "$port" k1.log -- --steps $STEPS --step-time 0.1 --checkpoint-every 20 --ballast-mb 24 --out "$W/k1.json"
wait_for 120 grep -q "step-20 committed: all 2 parts" "$W/k0.log" "$W/k1.log" || fail "step-20 was never committed"
wait_for 60 grep -q "persisting step-40" "$W/k1.log" || fail "node 1 never started persisting step-40"
victims=$(tree "$PID_1")
# shellcheck disable=SC2086 # one pid per word
kill -9 $victims 2>/dev/null || true
wait "$PID_1" 2>/dev/null || true
"$RR_BIN" ls > "$W/kls.out" 2>&1 || true
# Node 0's trainer now waits on a dead peer: that machine is lost too.
victims=$(tree "$PID_0")
# shellcheck disable=SC2086 # one pid per word
kill -9 $victims 2>/dev/null || true
wait "$PID_0" 2>/dev/null || true
newest=$(sed -nE 's/^[* ] (step-[0-9]+) +committed.*/\1/p' "$W/kls.out" | head -1)
expect_no_grep "step-40 +committed" "$W/kls.out" "step-40 committed without node 1's part"
rm -rf "$W/node0" "$W/node1"
port=$(free_port)
agent 0 "$port" r0.log -- --steps $STEPS --out "$W/r0.json"
agent 1 "$port" r1.log -- --steps $STEPS --out "$W/r1.json"
set +e; wait "$PID_0"; rc0=$?; wait "$PID_1"; rc1=$?; set -e
expect_eq "$rc0" 0 "node 0 after the kill"
expect_eq "$rc1" 0 "node 1 after the kill"
for k in 0 1; do
	expect_grep "restored $newest" "$W/r$k.log" "node $k restored $newest"
	expect_eq "$(json_field "$W/r$k.json" sha256)" "$(json_field "$W/ref$k.json" sha256)" "node $k final weights after the kill"
done
ok "node 1's agent killed while persisting step-40: both nodes restored $newest and finished bit-identical"
finish
