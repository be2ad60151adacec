#!/usr/bin/env bash
# README's PyTorch loop ("Your trainer"), run as it is with the wheel's resume_run and torch
# (issue 25: it used `start` and `steps` without defining them, and ran the saved step again
# on resume). A drill after its first checkpoint, exit 75, the machine lost, a fresh
# directory restores, and the loop goes on after the saved step: under --precision exact the
# final weights are bit-identical to an uninterrupted run's (one step run twice is not).
. "$(dirname "$0")/fwlib.sh"
awk 'index($0, "<!-- README snippet:") { on = 1; next }
     on && /^```/ { if (in_block) exit; in_block = 1; next } in_block { print }' \
	"$RR_SRC/README.md" > train.py
grep -q 'resume_run.Checkpointer()' train.py || fail "no PyTorch loop in README: $(cat train.py)"
# The test's harness around it, not in it: each optimizer step takes 2 ms (so that the drill
# lands mid-run), and the final weights are written where the test reads them.
cat > harness.py <<'PY'
import os, runpy, sys, time, torch
slow = os.environ.get("SLOW") == "1"
step = torch.optim.AdamW.step
def paced(self, *a, **k):
    if slow:
        time.sleep(0.002)
    return step(self, *a, **k)
torch.optim.AdamW.step = paced
g = runpy.run_path(sys.argv[1], run_name="__main__")
torch.save({k: v.clone() for k, v in g["model"].state_dict().items()}, sys.argv[2])
print("weights saved")
PY
env RESUME_RUN_CHECKPOINT_DIR="$W/ref-ckpt" "$FPY" harness.py train.py "$W/ref.pt" > ref.log 2>&1 ||
	fail "README's loop, uninterrupted, failed: $(tail -n 20 ref.log)"

store="file://$W/store"
(wait_for 120 test -d "$W/a/step-0" && sleep 0.2 && touch "$W/DRILL") &
toucher=$!
SLOW=1 run_rr a.log --precision exact --drill-file "$W/DRILL" --store "$store" --checkpoint-dir "$W/a" \
	-- "$FPY" harness.py train.py "$W/a.pt"
wait "$toucher" || fail "README's loop never committed step-0: $(tail -n 20 a.log)"
expect_eq "$RC" "$RR_PREEMPTED" "machine A's exit status"
ckpt=$(sed -nE 's/.*checkpoint (step-[0-9]+) is durable in the store.*/\1/p' a.log | tail -n 1)
[ -n "$ckpt" ] && [ "$ckpt" != step-0 ] || fail "no checkpoint on the drill: $(tail -n 20 a.log)"
rm -rf "$W/a" "$W/DRILL"
run_rr b.log --precision exact --store "$store" --checkpoint-dir "$W/b" -- "$FPY" harness.py train.py "$W/b.pt"
expect_eq "$RC" 0 "machine B's exit status"
expect_grep "restored $ckpt" b.log "machine B restored $ckpt"
expect_grep '^trained to step 2000$' b.log "the loop finished"
"$FPY" - "$W/ref.pt" "$W/b.pt" <<'PY' || fail "README's loop, resumed from $ckpt, does not end with the uninterrupted run's weights"
import sys, torch
a, b = (torch.load(p) for p in sys.argv[1:3])
sys.exit(0 if a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a) else 1)
PY
ok "README's PyTorch loop: drill at $ckpt -> exit 75 -> machine lost -> restored -> resumed after it -> final weights identical to an uninterrupted run"
finish
