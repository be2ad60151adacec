#!/usr/bin/env bash
# The demo of README's first command: build, then run the example trainer under resume-run
# on the local file:// store, preempt it with a drill notice, and restore it on a "new
# machine" (an empty checkpoint directory) where it finishes from the saved step.
set -euo pipefail
cd "$(dirname "$0")/.."
# RESUME_RUN_DEMO_BIN: an agent built already (tests/integration/test_demo.sh); else build one.
RR=${RESUME_RUN_DEMO_BIN:-}
if [ -z "$RR" ]; then
	scripts/install-deps.sh build
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j"$(nproc)" --target resume-run >/dev/null
	RR=$PWD/build/resume-run
fi
export PYTHONPATH=$PWD/scripts
TRAINER=$PWD/scripts/example_trainer.py

# This machine is no cloud: no metadata probes (a real run watches the cloud's notices).
export RESUME_RUN_CLOUD=none
# Every step has a time limit, and the demo's directory goes when it ends, however it ends.
LIMIT=300
demo=$(mktemp -d "${TMPDIR:-/tmp}/resume-run-demo.XXXXXX")
toucher=
cleanup() {
	[ -z "$toucher" ] || kill "$toucher" 2>/dev/null || true
	cd /
	rm -rf "$demo"
}
trap 'exit 130' INT
trap 'exit 143' TERM
trap cleanup EXIT
cd "$demo"
echo "== demo in $demo (removed at the end)"
echo "== machine 1: train; a drill notice arrives after step 100"
# The drill: touch the file once step-100 is committed; give up if the agent has gone.
agent_pid_file=$demo/.agent-pid
(
	for _ in $(seq $((LIMIT * 10))); do
		[ -d .resume-run/checkpoints/step-100 ] && { touch DRILL; exit 0; }
		[ -s "$agent_pid_file" ] && ! kill -0 "$(cat "$agent_pid_file")" 2>/dev/null && exit 1
		sleep 0.1
	done
	exit 1
) &
toucher=$!
# A run stopped by a notice exits 75 (--preempted-exit-code), so a relauncher restarts it.
rc=0
timeout --foreground "$LIMIT" "$RR" --drill-file DRILL -- /usr/bin/python3 "$TRAINER" --steps 400 --step-time 0.01 &
echo $! > "$agent_pid_file"
wait $! || rc=$?
wait "$toucher" || { echo "demo: the agent ended (status $rc) before step 100 was committed" >&2; exit 1; }
toucher=
[ "$rc" = 75 ] || { echo "demo: expected exit status 75 after the notice, got $rc$([ "$rc" = 124 ] && echo " (timed out after ${LIMIT}s)")" >&2; exit 1; }
echo "== exit status $rc: preempted, to be resumed"
echo
echo "== the store now holds:"
"$RR" ls
echo
echo "== machine 2: a fresh checkpoint directory; the same command line restores and finishes"
rm -rf .resume-run/checkpoints DRILL
timeout --foreground "$LIMIT" "$RR" -- /usr/bin/python3 "$TRAINER" --steps 400 --step-time 0 --out final.json
echo
echo "== an uninterrupted run, for comparison"
RESUME_RUN_CHECKPOINT_DIR=$demo/reference timeout --foreground "$LIMIT" /usr/bin/python3 "$TRAINER" --steps 400 --step-time 0 \
	--checkpoint-every 0 --out reference.json | tail -n 1
# The default --precision auto stores F32 tensors as scaled FP16 / BF16, so the resumed run
# is close to, not bit-identical with, the uninterrupted one (--precision exact gives that).
python3 - final.json reference.json <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
diff = abs(a["loss"] - b["loss"]) / b["loss"]
print(f"== final loss {a['loss']:.6f} after the preemption vs {b['loss']:.6f} uninterrupted "
      f"({diff:.3%} apart)")
sys.exit(0 if diff < 0.01 else 1)
PY
echo
echo "== the build is in $RR; to have resume-run on your PATH: sudo cmake --install build (README)"
