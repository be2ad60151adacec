#!/usr/bin/env bash
# What a new user meets in the first hour, each with the real binary: gc's grace is its own
# setting (the run's RESUME_RUN_GRACE of 25 s once deleted young chunks of a persist in
# flight); a drill file left from an earlier start is not a new notice; the default store is
# this machine's disk, said loudly on a cloud; wrong inputs (a run or store that is not there,
# a checkpoint dir under a missing parent, --keep 0) fail with one clear line instead of
# looking like success; a checkpoint saved again under the same name is persisted again
# (a step-numbered one is said: the store keeps its first commit), one written in place is
# said (never committed).
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/metalib.sh"
T="$RR_SRC/tests/integration/trainers/ticker.py"
STORE="file://$W/store"

# --- 1. gc's grace: --gc-grace / RESUME_RUN_GC_GRACE, never the run's RESUME_RUN_GRACE ---
run_rr real.log --store "$STORE" --run-id real --checkpoint-dir ck -- "$PY" "$T" --every 0.1 --until 2
expect_eq "$RC" 0 "a run to collect: exit status"
# A chunk no manifest names yet, 2 minutes old: what a persist still uploading on another
# machine has written before its manifest.
young="$W/store/real/chunks/ab/ab$(printf '%062d' 7)"
mkdir -p "$(dirname "$young")" && printf 'in flight' > "$young" && touch -d '2 minutes ago' "$young"
RESUME_RUN_GRACE=25 run_rr gc-env.log gc --store "$STORE" --run-id real
expect_eq "$RC" 0 "gc with the run's RESUME_RUN_GRACE=25 set: exit status"
[ -f "$young" ] || fail "gc took the run's RESUME_RUN_GRACE=25 as its own grace and deleted a 2-minute-old chunk"
run_rr gc-old-flag.log gc --store "$STORE" --run-id real --grace 25s
expect_eq "$RC" 125 "gc --grace: exit status"
expect_grep "gc: --grace is the run's SIGTERM deadline; gc's age for unreferenced chunks is --gc-grace DURATION" \
	gc-old-flag.log "gc --grace points to --gc-grace"
RESUME_RUN_GC_GRACE=30s run_rr gc-short.log gc --store "$STORE" --run-id real
expect_eq "$RC" 125 "RESUME_RUN_GC_GRACE=30s: exit status"
expect_grep "RESUME_RUN_GC_GRACE must be a duration of at least 10m" gc-short.log "a grace below the floor is refused"
run_rr gc-short2.log --gc-grace 5m --store "$STORE" -- true
expect_eq "$RC" 125 "run --gc-grace 5m: exit status"
expect_grep "invalid value '5m' for --gc-grace: must be a duration of at least 10m" gc-short2.log \
	"the run's retention refuses it too"
[ -f "$young" ] || fail "a refused gc deleted something"
touch -d '11 minutes ago' "$young"
run_rr gc-10m.log gc --store "$STORE" --run-id real --gc-grace 10m
expect_eq "$RC" 0 "gc --gc-grace 10m: exit status"
[ ! -e "$young" ] || fail "gc --gc-grace 10m left an unreferenced chunk 11 minutes old"
expect_grep 'gc: deleted 0 checkpoints and 1 chunks' gc-10m.log "gc says what it deleted"
ok "gc ignores RESUME_RUN_GRACE, refuses --grace and graces below 10m, and takes --gc-grace 10m"

# --- 2. A drill file left from an earlier start is not a notice ---
mkdir d1 && cd d1
touch NOTICE
run_rr ../d1.log --store "$STORE" --run-id drill --drill-file NOTICE -- "$PY" "$T" --every 0.2 --until 3
cd ..
expect_eq "$RC" 0 "a leftover drill file: exit status (it used to preempt at once: 75)"
expect_grep "drill file NOTICE already exists at start: not a notice" d1.log "the leftover is logged"
expect_no_grep "notice .*preempt" d1.log "no preemption from the leftover"
ok "a notice file present at start is logged and not taken as a notice"

mkdir d2 && cd d2
touch NOTICE
(
	wait_for 60 persisted_since 2 ../d2.log
	rm NOTICE && sleep 0.5 && touch NOTICE
) &
helper=$!
run_rr ../d2.log --store "$STORE" --run-id drill2 --drill-file NOTICE -- "$PY" "$T" --every 0.3 --until 200 --obey
wait $helper
cd ..
expect_eq "$RC" "$RR_PREEMPTED" "the drill file removed and created again: exit status"
expect_grep 'exit for the notice after step-' d2.log "the trainer obeyed the new notice"
ok "the drill file removed and created again is a notice: exit $RR_PREEMPTED"

# The drill file's name before 0.2.0, RESUME_RUN_NOTICE_FILE, is also the notice JSON the
# trainer reads (another file): the agent still takes it, for a release, and says so.
mkdir d3 && cd d3
( wait_for 60 persisted_since 2 ../d3.log && touch DRILL ) &
helper=$!
RESUME_RUN_NOTICE_FILE=DRILL run_rr ../d3.log --store "file://$W/store-old-names" --run-id drill3 -- "$PY" "$T" --every 0.3 --until 200 --obey
wait $helper
cd ..
expect_eq "$RC" "$RR_PREEMPTED" "a drill through RESUME_RUN_NOTICE_FILE: exit status"
expect_grep 'warning: RESUME_RUN_NOTICE_FILE is deprecated and goes in the next release: use --drill-file \(RESUME_RUN_DRILL_FILE\)' \
	d3.log "the old name is deprecated, with the new one"
run_rr d4.log --store "file://$W/store-old-names" --run-id drill4 --drill-file "$W/none" --notice-file "$W/none" -- true
expect_grep 'warning: --notice-file is deprecated' d4.log "the old flag is deprecated"
expect_eq "$(grep -c 'is deprecated' d3.log)" 1 "one warning"
ok "the drill file is --drill-file (RESUME_RUN_DRILL_FILE); RESUME_RUN_NOTICE_FILE and --notice-file still work, with a deprecation warning"

# --- 3. The default store on a cloud: said loudly at start ---
start_meta aws
mkdir c1 && cd c1
( wait_for 60 persisted_since 2 ../c1.log && ctl "announce?in=0" ) &
helper=$!
run_rr ../c1.log --cloud aws --metadata-endpoint "$META_URL" --poll-interval 200ms \
	-- "$PY" "$T" --every 0.3 --until 200 --obey
wait $helper
cd ..
expect_eq "$RC" "$RR_PREEMPTED" "default store on aws, interrupted: exit status"
expect_grep "warning: this notice's checkpoint goes to this machine's disk \(file://\./\.resume-run/store, the default store\): it is lost with the machine" \
	c1.log "the notice says where its checkpoint goes"
expect_grep "warning: the store is this machine's disk \(file://\./\.resume-run/store, the default\) on aws: its checkpoints are lost with the machine" \
	c1.log "the default store on a cloud is said loudly"
ctl reset
mkdir c2 && cd c2
run_rr ../c2.log --cloud aws --metadata-endpoint "$META_URL" --store "file://$W/c2/st" -- sh -c 'sleep 1.5'
cd ..
expect_eq "$RC" 0 "an explicit file:// store on aws: exit status"
expect_no_grep "this machine's disk" c2.log "an explicit file:// store is the user's choice"
stop_meta
ok "the default store on aws is warned about; an explicit file:// store is not"

# --- 4. Wrong inputs fail with one clear line ---
run_rr verify-nope.log verify --store "$STORE" --run-id nope
expect_eq "$RC" 125 "verify --run-id nope: exit status (it was 0, printing nothing)"
expect_grep "no run 'nope' in $STORE; runs there: drill, drill2, real" verify-nope.log "verify names the runs that exist"
run_rr ls-nope.log ls --store "$STORE" --run-id nope
expect_eq "$RC" 125 "ls --run-id nope: exit status"
expect_grep "no run 'nope' in $STORE; runs there: drill, drill2, real" ls-nope.log "ls names the runs that exist"
run_rr ls-nostore.log ls --store "file://$W/no-such-store"
expect_eq "$RC" 125 "ls of a store path that does not exist: exit status"
expect_grep "cannot open store file://$W/no-such-store: its directory does not exist \(nothing was stored there\)" \
	ls-nostore.log "the missing store is said"
[ ! -e "$W/no-such-store" ] || fail "ls created the store directory it was asked to list"
run_rr ls-real.log ls --store "$STORE" --run-id real
expect_eq "$RC" 0 "ls of a run that exists: exit status"
ok "verify/ls of a missing run or store: 125 with the runs that exist, nothing created"

run_rr ckdir.log --store "$STORE" --checkpoint-dir "$W/no/parent/ck" -- true
expect_eq "$RC" 125 "--checkpoint-dir under a missing parent: exit status"
expect_grep "cannot create the checkpoint directory $W/no/parent/ck: its parent $W/no/parent does not exist" \
	ckdir.log "the missing parent is named"
[ ! -e "$W/no" ] || fail "--checkpoint-dir created the missing parents"
run_rr ckdir2.log --store "$STORE" --checkpoint-dir "$W/fresh-ck" -- true
expect_eq "$RC" 0 "--checkpoint-dir whose parent exists: exit status"
[ -d "$W/fresh-ck" ] || fail "--checkpoint-dir whose parent exists was not created"
ok "--checkpoint-dir: only the last component is created; a missing parent is refused"

run_rr keep0.log --keep 0 -- true
expect_eq "$RC" 125 "--keep 0: exit status"
expect_grep "^resume-run: error: invalid value '0' for --keep: must be 1-1000000$" keep0.log "--keep 0 with its range, one prefix"
run_rr keep0gc.log gc --keep 0
expect_grep "^resume-run: error: gc: invalid value '0' for --keep: must be 1-1000000$" keep0gc.log "gc --keep 0"
ok "--keep 0: one prefix and the valid range"

# The same name committed three times (Checkpointer.commit("latest") does so, moving the old
# one aside; so do Lightning's last.ckpt and a ckpt.pt that os.replace() puts in place):
# each commit is persisted in its turn, and a new machine resumes from the third (before,
# the store kept the first, and the run went back to it). A step-numbered name committed
# again keeps its first commit, said once; torch.save to a final name in place (nanoGPT's
# ckpt.pt) is never committed, said once.
cat > samename.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
for i in 1 2 3; do
	mkdir -p "$d/.latest.tmp"; echo "state $i" > "$d/.latest.tmp/s.txt"
	[ ! -e "$d/latest" ] || mv "$d/latest" "$d/.latest.old"
	mv "$d/.latest.tmp" "$d/latest"; rm -rf "$d/.latest.old"; sleep 1.2
done
echo model > "$d/ckpt.pt"; echo model2 > "$d/ckpt.pt"; sleep 0.5
SH
run_rr samename.log --store "file://$W/samename" --checkpoint-dir "$W/ck-same" -- sh samename.sh
expect_eq "$RC" 0 "same name: exit status"
expect_eq "$(grep -c 'committed again under the same name' samename.log)" 0 "a name without a step committed again: no warning"
expect_eq "$(grep -c '^resume-run: persisted latest:' samename.log)" 3 "each commit of latest persisted"
expect_eq "$(grep -c '"ckpt.pt" in .* was written in place' samename.log)" 1 "the in-place file said once"
run_rr samename-restore.log restore --store "file://$W/samename" --to "$W/new-machine"
expect_eq "$RC" 0 "same name: restore"
expect_eq "$(cat "$W/new-machine/latest/s.txt")" "state 3" "a new machine resumes from the third commit of latest"
cat > samestep.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
for i in 1 2; do echo "state $i" > "$d/.s.tmp"; mv "$d/.s.tmp" "$d/step-5"; sleep 1.2; done
SH
run_rr samestep.log --store "file://$W/samestep" --checkpoint-dir "$W/ck-step" -- sh samestep.sh
expect_eq "$RC" 0 "same step name: exit status"
expect_eq "$(grep -c 'checkpoint step-5 committed again under the same name' samestep.log)" 1 "a step-numbered name committed again said once"
ok "a name without a step committed again is persisted each time (a new machine gets the last); a step name again and an in-place file are each said once"

# The same checkpoint directory given to a new --run-id (a new job on the same volume): the
# old run's checkpoints are not the new run's. They are moved aside; the new run starts
# fresh, as its log says, and stores nothing of them. Before, it resumed from them and
# stored them under the new run's name after saying "fresh start".
cat > twosteps.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
echo "restore dir: ${RESUME_RUN_RESTORE_DIR:-none}"
for i in 1 2; do
	mkdir -p "$d/.step-$i.tmp"; echo "run $RESUME_RUN_ID step $i" > "$d/.step-$i.tmp/s.txt"
	mv "$d/.step-$i.tmp" "$d/step-$i"
done
SH
run_rr owner1.log --run-id first --store "file://$W/owner" --checkpoint-dir "$W/ck-owner" -- sh twosteps.sh
expect_eq "$RC" 0 "run 'first'"
run_rr owner2.log --run-id second --store "file://$W/owner" --checkpoint-dir "$W/ck-owner" -- true
expect_eq "$RC" 0 "run 'second'"
expect_grep "no checkpoint of run 'second' .*fresh start" owner2.log "second: a fresh start"
expect_grep "checkpoint step-2 in the checkpoint directory is run 'first''s, not 'second''s: moved aside" owner2.log "second: first's step-2 moved aside"
expect_no_grep 'resuming from step-' owner2.log "second: resumed from first's checkpoint"
"$RR_BIN" ls --run-id second --store "file://$W/owner" > owner2-ls.out 2>&1 || true
expect_no_grep 'step-' owner2-ls.out "second: first's checkpoints stored under second"
ok "a new --run-id on a used checkpoint directory starts fresh: the other run's checkpoints are moved aside, not resumed from or stored"
finish
