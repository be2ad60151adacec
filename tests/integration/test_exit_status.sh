#!/usr/bin/env bash
# The agent exits with the trainer's status, like a shell: the code itself, 128+N for
# signal N, 127 command not found, 126 not executable, 125 for its own errors.
. "$(dirname "$0")/lib.sh"

check() { # EXPECTED WHAT ARGS...
	local want=$1 what=$2; shift 2
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

# stdin, stdout and stderr pass through untouched.
out=$(printf 'hello' | "$RR_BIN" --store "file://$W/store" --checkpoint-dir "$W/ck" -- sh -c 'cat; echo " err" >&2' 2>err.txt)
expect_eq "$out" "hello" "stdin to stdout through the trainer"
expect_grep '^ err$' err.txt "trainer's stderr"
ok "stdin/stdout/stderr pass through"
finish
