#!/usr/bin/env bash
# The demo of README's first command: build, then run the example trainer under resume-run
# on the local file:// store, preempt it with a drill notice, and restore it on a "new
# machine" (an empty checkpoint directory) where it finishes from the saved step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target resume-run >/dev/null
RR=$PWD/build/resume-run
export PYTHONPATH=$PWD/scripts
TRAINER=$PWD/scripts/example_trainer.py

demo=$(mktemp -d /tmp/resume-run-demo.XXXXXX)
cd "$demo"
echo "== demo in $demo"
echo "== machine 1: train; a drill notice arrives after step 100"
( i=0; while [ ! -d .resume-run/checkpoints/step-100 ] && [ $((i += 1)) -le 600 ]; do sleep 0.1; done; touch PREEMPT ) & # 60 s at most: the agent may exit first
# A run stopped by a notice exits 75 (--preempted-exit-code), so a relauncher restarts it.
rc=0
"$RR" --notice-file PREEMPT -- /usr/bin/python3 "$TRAINER" --steps 400 --step-time 0.01 || rc=$?
wait
[ "$rc" = 75 ] || { echo "demo: expected exit status 75 after the notice, got $rc" >&2; exit 1; }
echo "== exit status $rc: preempted, to be resumed"
echo
echo "== the store now holds:"
"$RR" ls
echo
echo "== machine 2: a fresh checkpoint directory; the same command line restores and finishes"
rm -rf .resume-run/checkpoints PREEMPT
"$RR" -- /usr/bin/python3 "$TRAINER" --steps 400 --step-time 0 --out final.json
echo
echo "== an uninterrupted run, for comparison"
RESUME_RUN_CHECKPOINT_DIR=$demo/reference /usr/bin/python3 "$TRAINER" --steps 400 --step-time 0 \
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
