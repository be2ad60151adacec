#!/usr/bin/env bash
# The agent exits with the trainer's status, like a shell: the code itself, 128+N for
# signal N, 127 command not found, 126 not executable, 125 for its own errors; and
# --preempted-exit-code (75) when a preemption/termination notice stopped the trainer.
. "$(dirname "$0")/lib.sh"

check() { # EXPECTED WHAT ARGS...
	local want=$1 what=$2; shift 2
	rm -f PREEMPT REBALANCE # a notice file there at start is a leftover, not a notice
	run_rr "exit-$want.log" --max-restarts 0 --store "file://$W/store" --checkpoint-dir "$W/ck" "$@"
	expect_eq "$RC" "$want" "$what"
	ok "$what -> $want"
}

check 0 "trainer exits 0" -- sh -c 'exit 0'
check 7 "trainer exits 7" -- sh -c 'exit 7'
check 137 "trainer killed by SIGKILL" -- sh -c 'kill -KILL $$'
check 143 "trainer killed by SIGTERM" -- sh -c 'kill -TERM $$'
printf 'not a program\n' > notexec; chmod 0644 notexec
check 126 "command not executable" -- ./notexec
check 127 "command not found" -- no-such-command-here
expect_grep 'cannot run .no-such-command-here.: command not found' exit-127.log "one clear line"
check 125 "agent error: unknown option" --no-such-option -- true
check 125 "agent error: unsupported store" --store s3://bucket/prefix -- true
expect_grep 'cannot open store s3://bucket/prefix' exit-125.log "store error names the URL"

# A notice stopped the trainer: the preempted status, whatever the trainer's own. The
# trainers are shell scripts whose USR1 trap is their checkpoint handler; each announces the
# notice itself once running (a file there before the agent started would be a leftover).
printf '{"kind":"preempt"}' > PREEMPT.json
printf '{"kind":"rebalance"}' > REBALANCE.json
cat > exits_on_notice.sh <<'SH'
trap 'echo "notice seen"; exit $1' USR1
cp PREEMPT.json PREEMPT
while :; do sleep 0.05; done
SH
cat > goes_on.sh <<'SH'
trap 'got=1' USR1
cp REBALANCE.json REBALANCE
while [ -z "${got:-}" ]; do sleep 0.05; done
echo "carried on past the notice"
exit 0
SH
check 75 "notice, trainer exits 0" --drill-file PREEMPT -- sh exits_on_notice.sh 0
expect_grep 'notice seen' exit-75.log "the trainer got the checkpoint request"
expect_grep 'leaving with status 75: stopped by a notice \(trainer.s own status 0\)' exit-75.log "said why"
check 75 "notice, trainer exits 3" --drill-file PREEMPT -- sh exits_on_notice.sh 3
check 0 "notice, --preempted-exit-code 0, trainer exits 0" --preempted-exit-code 0 --drill-file PREEMPT -- sh exits_on_notice.sh 0
check 3 "notice, --preempted-exit-code 0, trainer exits 3" --preempted-exit-code 0 --drill-file PREEMPT -- sh exits_on_notice.sh 3
expect_no_grep 'leaving with status' exit-3.log "no preempted status with 0"
RESUME_RUN_PREEMPTED_EXIT_CODE=99 check 99 "notice, RESUME_RUN_PREEMPTED_EXIT_CODE=99" --drill-file PREEMPT -- sh exits_on_notice.sh 0
RESUME_RUN_PREEMPTED_EXIT_CODE=99 check 42 "the flag beats the environment" --preempted-exit-code 42 --drill-file PREEMPT -- sh exits_on_notice.sh 0
# A trainer that leaves as soon as it reads the notice file, having committed just before it
# (or between the notice and the request: the example trainer checks should_exit() after
# every commit) and answering no request: its last commit is the notice's checkpoint, made
# durable and said so, as the next machine resumes from it. The agent used to leave with 75
# and no word of it (a CI run's integration_azure_store, under load).
cat > leaves_unasked.sh <<'SH'
trap ':' USR1
d=$RESUME_RUN_CHECKPOINT_DIR
mkdir -p "$d/.step-1.tmp" && echo state > "$d/.step-1.tmp/state" && mv "$d/.step-1.tmp" "$d/step-1"
sleep 0.3
cp PREEMPT.json PREEMPT
while [ ! -e "$RESUME_RUN_NOTICE_FILE" ]; do sleep 0.02; done
exit 0
SH
rm -f PREEMPT
run_rr exit-unasked.log --max-restarts 0 --store "file://$W/store-unasked" --checkpoint-dir "$W/ck-unasked" \
	--drill-file PREEMPT -- sh leaves_unasked.sh
expect_eq "$RC" 75 "a trainer that left at the notice, unasked"
expect_grep 'checkpoint step-1 is durable in the store' exit-unasked.log "its last commit is the notice's, durable"
ok "a trainer that left at the notice without answering: 75, its last commit durable for the notice"
check 0 "rebalance notice, training goes on and finishes" --drill-file REBALANCE -- sh goes_on.sh
expect_grep 'carried on past the notice' exit-0.log "the trainer went on"
expect_grep 'notice: rebalance from file' exit-0.log "the rebalance notice was seen"
# The drill file written in steps, as a shell's `>` does (created empty, then written), and
# a writer cut short: neither the empty file nor half a JSON notice is a `touch` drill (a
# preemption) yet; the rebalance written in the end is what counts.
cat > writes_slowly.sh <<'SH'
trap 'got=1' USR1
: > REBALANCE
sleep 0.25
printf '{"kind":"reb' > REBALANCE
sleep 0.25
cat REBALANCE.json > REBALANCE
while [ -z "${got:-}" ]; do sleep 0.05; done
exit 0
SH
check 0 "a drill file created empty, then written: its rebalance" --drill-file REBALANCE -- sh writes_slowly.sh
expect_grep 'notice: rebalance from file' exit-0.log "the rebalance notice, not the empty file's preemption"
# Multi-node: node 0's trainer leaves for a notice node 1 got (the ranks agree on it faster
# than the store's listing, once a second, brings it to node 0's agent): node 0 leaves with
# 75 too, not 0 (finished). The trainer writes node 1's notice into the store the way node
# 1's agent does, then exits 0 at once.
cat > leaves_for_node1.sh <<'SH'
sleep 0.3
d="$MN_STORE/mn/notices"
mkdir -p "$d"
printf '{"kind":"preempt","deadline_unix":null}' > "$d/.tmp"
mv "$d/.tmp" "$d/$(printf %013d $(($(date +%s%N) / 1000000)))-node1.json"
exit 0
SH
MN_STORE="$W/mn-store" run_rr exit-mn.log --max-restarts 0 --nnodes 2 --node-rank 0 --run-id mn \
	--store "file://$W/mn-store" --checkpoint-dir "$W/ck-mn" -- sh leaves_for_node1.sh
expect_eq "$RC" 75 "multi-node: the trainer left for another node's notice"
expect_grep 'notice from another node of the job' exit-mn.log "node 1's notice taken as the trainer left"
ok "multi-node: the trainer left for another node's notice -> 75"
check 0 "no notice, trainer exits 0 on its own" --drill-file NO-SUCH-NOTICE -- sh -c 'exit 0'
check 125 "agent error: --preempted-exit-code 256" --preempted-exit-code 256 -- true
RESUME_RUN_PREEMPTED_EXIT_CODE=x check 125 "agent error: RESUME_RUN_PREEMPTED_EXIT_CODE=x" -- true
expect_grep 'RESUME_RUN_PREEMPTED_EXIT_CODE must be 0-255' exit-125.log "one clear line"

# A machine without libcurl (loaded on the first network use, storage/net/curl_api.c): a
# network store is an agent error that says which library is missing, before the trainer
# starts; a file:// store with no cloud does not need it. /dev/null is bound over the
# library in a mount namespace of its own, as if it were not installed.
curl_so=$(ldconfig -p | sed -nE 's/.*libcurl\.so\.4 .*=> (.*)$/\1/p' | head -n 1)
[ -n "$curl_so" ] || fail "no libcurl.so.4 known to ldconfig"
without_libcurl() { # LOG CMD...: CMD with /dev/null over libcurl.so.4; sets RC
	local log=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --mount sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$curl_so" \
		"$@" > "$log" 2>&1 && RC=0 || RC=$?
}
without_libcurl nolib.log env AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=y AWS_REGION=us-east-1 \
	AWS_ENDPOINT_URL=http://127.0.0.1:9 "$RR_BIN" --cloud none --store s3://bucket/nolib \
	--checkpoint-dir "$W/ck-nolib" -- touch "$W/nolib-ran"
expect_eq "$RC" 125 "agent error: an s3:// store and no libcurl"
expect_grep 'cannot load libcurl\.so\.4 .*apt-get install libcurl4' nolib.log "the missing library named"
[ ! -e "$W/nolib-ran" ] || fail "the trainer ran with no store to persist to"
without_libcurl nolib-file.log "$RR_BIN" --cloud none --store "file://$W/store-nolib" \
	--checkpoint-dir "$W/ck-nolib" -- true
expect_eq "$RC" 0 "a file:// store with no cloud and no libcurl"
ok "no libcurl: s3:// store -> 125, '$(grep -o 'cannot load libcurl[^(]*' nolib.log)' named; file:// -> runs"

# stdin, stdout and stderr pass through untouched.
out=$(printf 'hello' | "$RR_BIN" --store "file://$W/store" --checkpoint-dir "$W/ck" -- sh -c 'cat; echo " err" >&2' 2>err.txt)
expect_eq "$out" "hello" "stdin to stdout through the trainer"
expect_grep '^ err$' err.txt "trainer's stderr"
ok "stdin/stdout/stderr pass through"
finish
