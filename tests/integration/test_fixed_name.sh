#!/usr/bin/env bash
# One checkpoint file saved again and again under one name (torch.save to a temp name, then
# os.replace onto ckpt.pt, as plain PyTorch scripts do; Lightning's last.ckpt alike): every
# commit of it is persisted in its turn, the notice's too, and a new machine resumes from the
# last one, ending bit-identical to a run never stopped (--precision exact). Before, the store
# kept the name's first commit and a new machine went back to it.
. "$(dirname "$0")/lib.sh"
T=("$PY" "$RR_SRC/tests/integration/trainers/fixed_name.py" --steps 150 --every 20)

mkdir -p "$W/ref-ckpt"
env -u RESUME_RUN_RESTORE_DIR RESUME_RUN_CHECKPOINT_DIR="$W/ref-ckpt" "${T[@]}" --out ref.json > ref.log
# Machine 1: the notice once ckpt.pt has been persisted twice (its first commit replaced).
( wait_for 60 sh -c "[ \$(grep -c '^resume-run: persisted ckpt.pt:' m1.log) -ge 2 ]" && touch NOTICE ) &
run_rr m1.log --precision exact --drill-file NOTICE -- "${T[@]}" --step-time 0.03 --out m1.json
wait
expect_eq "$RC" "$RR_PREEMPTED" "machine 1 exit status"
[ ! -f m1.json ] || fail "machine 1 should have stopped for the preemption, not finished"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m1.log)
[ -n "$saved" ] && [ "$saved" -gt 40 ] || fail "the trainer did not checkpoint on the notice (saved='$saved')"
expect_grep 'checkpoint ckpt.pt is durable in the store' m1.log "the notice's commit of ckpt.pt durable"
expect_grep 'ckpt.pt. was committed again: its store copy is this commit now' m1.log "the store's copy replaced"
[ "$(grep -c 'committed again under the same name' m1.log)" = 0 ] || fail "a warning that the commit is not persisted"
ok "machine 1: ckpt.pt saved at steps 20, 40, ... and at $saved for the notice, each persisted"

# Machine 2: nothing local survives.
rm -rf .resume-run/checkpoints NOTICE
run_rr m2.log --precision exact -- "${T[@]}" --out m2.json
expect_eq "$RC" 0 "machine 2 exit status"
expect_grep "resumed from step $saved\$" m2.log "the trainer resumed from the notice's commit"
expect_eq "$(json_field m2.json sha256)" "$(json_field ref.json sha256)" "final weights"
expect_eq "$(json_field m2.json loss_history_sha256)" "$(json_field ref.json loss_history_sha256)" "loss history"
ok "new machine: resumed from step $saved (the last commit of ckpt.pt), final state identical to an uninterrupted run"

# nanoGPT's way: torch.save straight to ckpt.pt, no temp name. Each save is committed when
# its file is whole (a torch.save zip with every record and its end records), so the same
# holds: a new machine resumes from the notice's save.
rm -rf .resume-run NOTICE
( wait_for 60 sh -c "[ \$(grep -c '^resume-run: persisted ckpt.pt:' m4.log) -ge 2 ]" && touch NOTICE ) &
run_rr m4.log --precision exact --drill-file NOTICE -- "${T[@]}" --in-place --step-time 0.03 --out m4.json
wait
expect_eq "$RC" "$RR_PREEMPTED" "in place, machine 1 exit status"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m4.log)
[ -n "$saved" ] && [ "$saved" -gt 40 ] || fail "in place: the trainer did not checkpoint on the notice (saved='$saved')"
expect_grep 'checkpoint ckpt.pt is durable in the store' m4.log "in place: the notice's save durable"
[ "$(grep -c 'written in place' m4.log)" = 0 ] || fail "in place: warned as never committed"
rm -rf .resume-run/checkpoints NOTICE
run_rr m5.log --precision exact -- "${T[@]}" --in-place --out m5.json
expect_eq "$RC" 0 "in place, machine 2 exit status"
expect_grep "resumed from step $saved\$" m5.log "in place: the trainer resumed from the notice's save"
expect_eq "$(json_field m5.json sha256)" "$(json_field ref.json sha256)" "in place: final weights"
ok "torch.save in place (nanoGPT): every save committed once whole; a new machine resumed from step $saved, identical to an uninterrupted run"

# A trainer that fails now and then, after progress: every attempt resumes from ckpt.pt and
# saves it again before it fails. Those are newer commits, so the one it resumed from is not
# suspect (before, the name alone was compared: two failures marked the newest state suspect).
run_rr m3.log --store "file://$W/crashy" --checkpoint-dir "$W/ck-crashy" --precision exact \
	--max-restarts 3 --suspect-after 2 -- "${T[@]}" --crash-after 30
expect_eq "$RC" 1 "a trainer failing after each save: exit status once the restarts are spent"
expect_eq "$(grep -c '^resumed from step' m3.log)" 3 "each restart resumed from ckpt.pt"
expect_eq "$(grep -c -i 'suspect' m3.log)" 0 "nothing marked suspect"
run_rr m3r.log restore --store "file://$W/crashy" --to "$W/crashy-new"
expect_eq "$RC" 0 "restore after the failures"
last=$(sed -nE 's/^saved step ([0-9]+)$/\1/p' m3.log | tail -1)
"$PY" -c 'import sys, torch; print("step %d" % torch.load(sys.argv[1])["step"])' "$W/crashy-new/ckpt.pt" > m3.step
expect_eq "$(cat m3.step)" "step $last" "a new machine gets the last save"
ok "a trainer failing after progress: ckpt.pt committed again each attempt, never marked suspect; a new machine gets step $last"

# The commit the trainer fails from never reached the store (its persist refused here: a
# file name restore would refuse; a persist still uploading when the mark comes is the
# same): the store's copy of the name is an earlier commit, which is not the suspect one.
# It is left unmarked and put back in place of the failing one. Before, the name alone was
# marked: the earlier good commit was marked suspect and the trainer started afresh.
cat > failing.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
echo "attempt $RESUME_RUN_ATTEMPT from ${RESUME_RUN_RESTORE_DIR:-nothing}: $(cat "${RESUME_RUN_RESTORE_DIR:-/dev/null}/s.txt" 2>/dev/null)"
case $RESUME_RUN_ATTEMPT in
0)	mkdir "$d/.last.tmp" && echo A > "$d/.last.tmp/s.txt" && mv "$d/.last.tmp" "$d/last"
	sleep 1.5
	mkdir "$d/.last.tmp" && echo B > "$d/.last.tmp/s.txt" && : > "$d/.last.tmp/not\\restorable" &&
		mv "$d/last" "$d/.last.old" && mv "$d/.last.tmp" "$d/last"
	sleep 1.5; exit 1 ;;
1)	exit 1 ;;
*)	exit 0 ;;
esac
SH
run_rr m6.log --store "file://$W/failing" --checkpoint-dir "$W/ck-failing" --max-restarts 3 \
	--suspect-after 1 -- sh failing.sh
expect_eq "$RC" 0 "the earlier commit put back: exit status"
expect_grep 'the store holds an earlier commit of it, which is not marked and takes its place' m6.log "the earlier commit left unmarked"
expect_grep '^attempt 2 from .*/last: A$' m6.log "the trainer restarted from the earlier commit"
[ ! -f "$W/failing/default/checkpoints/last/suspect.json" ] || fail "the earlier commit was marked suspect"
ok "a failing commit that never reached the store: the store's earlier commit of the name is not marked, and the trainer restarts from it"

# The checkpoint directory's clock (an NFS or EFS server's, which sets the files' times) two
# minutes behind the agent's (libfaketime on the agent only): the trainer's commit of the
# restored name right after the restore is its own, and is persisted. Before, the restored
# copy was told apart by the agent's clock: every commit of the name within those two
# minutes was taken for the copy, and never persisted.
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
[ -e "$FAKETIME_LIB" ] || fail "libfaketime is missing (scripts/install-deps.sh test installs faketime)"
cat > resave.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
echo "from ${RESUME_RUN_RESTORE_DIR:+$(cat "$RESUME_RUN_RESTORE_DIR/s.txt")}"
mkdir "$d/.last.tmp" && echo "$1" > "$d/.last.tmp/s.txt"
[ ! -e "$d/last" ] || mv "$d/last" "$d/.last.old"
mv "$d/.last.tmp" "$d/last" && rm -rf "$d/.last.old" && sleep 1
SH
run_rr m7.log --store "file://$W/skew" --checkpoint-dir "$W/ck-skew1" -- sh resave.sh A
expect_eq "$RC" 0 "skew: machine 1"
env LD_PRELOAD="$FAKETIME_LIB" FAKETIME=+2m FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 \
	FAKETIME_DONT_RESET=1 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
	"$RR_BIN" --store "file://$W/skew" --checkpoint-dir "$W/ck-skew2" -- \
	env -u LD_PRELOAD -u FAKETIME sh resave.sh B > m8.log 2>&1 || fail "skew: machine 2 failed"
expect_grep '^from A$' m8.log "skew: machine 2 resumed from A"
expect_grep '^resume-run: persisted last:' m8.log "skew: the trainer's commit after the restore persisted"
run_rr m9.log restore --store "file://$W/skew" --to "$W/skew-new"
expect_eq "$(cat "$W/skew-new/last/s.txt")" "B" "skew: a new machine gets B"
ok "the directory's clock behind the agent's: the trainer's commit of the restored name is persisted"

# A save in place cut short as the trainer died (the disk full, an OOM kill): the local
# ckpt.pt is half a zip, not what was committed. The restart puts the store's copy (the save
# before) in its place instead of letting the trainer fail on it; nothing is marked suspect;
# the cut file is never stored. Before, each restart failed on the cut file and the store's
# good copy was marked suspect: the trainer started afresh.
cat > cutsave.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
if [ -n "${RESUME_RUN_RESTORE_DIR:-}" ]; then
	if cmp -s "$RESUME_RUN_RESTORE_DIR" "$1"; then echo "attempt $RESUME_RUN_ATTEMPT: whole"; else echo "attempt $RESUME_RUN_ATTEMPT: cut"; exit 1; fi
fi
[ "$RESUME_RUN_ATTEMPT" != 0 ] && exit 0
cat "$1" > "$d/ckpt.pt"; sleep 1.5
head -c "$2" "$1" > "$d/ckpt.pt"; sleep 0.2; exit 1
SH
# Cut in its records (1000 bytes), and before its first byte (torch.save truncates the file,
# then pickles: a save killed while pickling leaves it empty).
for n in 1000 0; do
	run_rr m10-$n.log --store "file://$W/cut-$n" --checkpoint-dir "$W/ck-cut-$n" -- \
		sh cutsave.sh "$RR_SRC/tests/fuzz/corpus/fuzz_torch_zip/little.pt" $n
	expect_eq "$RC" 0 "cut save ($n bytes): exit status"
	expect_grep 'checkpoint ckpt.pt here is not whole' m10-$n.log "cut save ($n bytes): seen before the restart"
	expect_grep '^attempt 1: whole$' m10-$n.log "cut save ($n bytes): the restart resumed from the store's copy"
	[ "$(grep -c -i 'suspect' m10-$n.log)" = 0 ] || fail "cut save ($n bytes): something was marked suspect"
	run_rr m11-$n.log restore --store "file://$W/cut-$n" --to "$W/cut-new-$n"
	cmp -s "$W/cut-new-$n/ckpt.pt" "$RR_SRC/tests/fuzz/corpus/fuzz_torch_zip/little.pt" ||
		fail "cut save ($n bytes): the store's ckpt.pt is not the whole save"
done
ok "a save in place cut short as the trainer died (in its records, or empty): the store's copy put back for the restart, nothing marked suspect, the cut file never stored"

# Saved again unchanged, then failing from it: the store keeps the first commit's time for
# the same content, which is still the state the trainer fails from, and is marked.
cat > sameagain.sh <<'SH'
d=$RESUME_RUN_CHECKPOINT_DIR
[ "$RESUME_RUN_ATTEMPT" = 0 ] || exit 1
for i in 1 2; do
	mkdir "$d/.last.tmp" && echo A > "$d/.last.tmp/s.txt"
	[ ! -e "$d/last" ] || mv "$d/last" "$d/.last.old"
	mv "$d/.last.tmp" "$d/last" && rm -rf "$d/.last.old" && sleep 1.2
done
exit 1
SH
run_rr m12.log --store "file://$W/same" --checkpoint-dir "$W/ck-same2" --max-restarts 1 \
	--suspect-after 1 -- sh sameagain.sh
expect_eq "$RC" 1 "saved again unchanged, then failing: exit status"
expect_grep 'checkpoint last marked suspect' m12.log "saved again unchanged: the state failed from marked"
ok "saved again unchanged, then failing from it: the store's copy (the same content) is marked suspect"
# Lightning's save_last at a notice: the answer epoch=0-step=10.ckpt, big, is persisting when
# last.ckpt follows it 50 ms later. last.ckpt sorts before it (a new machine restores by step
# number), so it does not take the notice's place: it used to cancel step-10's persist, be
# called durable itself, and leave the store's newest at step-5.
cat > savelast.sh <<'SH'
trap 'asked=1' USR1
d=$RESUME_RUN_CHECKPOINT_DIR
save() { head -c "$2" /dev/urandom > "$d/.$1.tmp" && mv "$d/.$1.tmp" "$d/$1"; }
if [ -n "${RESUME_RUN_RESTORE_DIR:-}" ]; then echo "resumed from $(basename "$RESUME_RUN_RESTORE_DIR")"; exit 0; fi
save "epoch=0-step=5.ckpt" 1000; sleep 0.05; save last.ckpt 1000
while ! grep -q '^resume-run: persisted last.ckpt' m13.log; do sleep 0.05; done
printf '{"kind":"preempt"}' > NOTICE.tmp && mv NOTICE.tmp NOTICE
while [ -z "${asked:-}" ]; do sleep 0.05; done
save "epoch=0-step=10.ckpt" 100000000; sleep 0.05; save last.ckpt 1000
exit 0
SH
rm -rf .resume-run NOTICE
run_rr m13.log --drill-file NOTICE -- sh savelast.sh
expect_eq "$RC" "$RR_PREEMPTED" "save_last at a notice: exit status"
expect_grep 'checkpoint epoch=0-step=10.ckpt is durable in the store' m13.log "save_last at a notice: the step file answers it"
expect_no_grep 'set aside' m13.log "save_last at a notice: the step file's persist cut"
rm -rf .resume-run/checkpoints NOTICE
run_rr m14.log -- sh savelast.sh
expect_grep 'resumed from epoch=0-step=10.ckpt' m14.log "save_last at a notice: a new machine resumes from the step file"
ok "save_last at a notice: epoch=0-step=10.ckpt is the notice's checkpoint, last.ckpt after it; a new machine resumes from step 10"
# The same name saved again at a notice: a routine save of ckpt.pt under way as the request
# came is the notice's first, the trainer's real answer 50 ms later takes its place (it did
# not, after the fix above compared it by step number: the older save was said durable).
cat > twosaves.sh <<'SH'
trap 'asked=1' USR1
d=$RESUME_RUN_CHECKPOINT_DIR
save() { head -c "$1" /dev/urandom > "$d/.ckpt.pt.tmp" && mv "$d/.ckpt.pt.tmp" "$d/ckpt.pt"; }
save 1000
while ! grep -q '^resume-run: persisted ckpt.pt' m15.log; do sleep 0.05; done
printf '{"kind":"preempt"}' > NOTICE.tmp && mv NOTICE.tmp NOTICE
while [ -z "${asked:-}" ]; do sleep 0.05; done
save 100000000
sleep 0.05
save 2000
exit 0
SH
rm -rf .resume-run NOTICE
run_rr m15.log --drill-file NOTICE -- sh twosaves.sh
expect_eq "$RC" "$RR_PREEMPTED" "saved again at a notice: exit status"
expect_grep 'checkpoint ckpt.pt committed after ckpt.pt: the notice takes it' m15.log "saved again at a notice: the second save answers it"
ok "saved again at a notice: the trainer's second save of ckpt.pt takes the notice's place"
finish
