#!/usr/bin/env bash
# A trainer started from a terminal gets the terminal, as a shell's foreground job does: it
# reads stdin (input(), pdb, a login prompt) instead of being stopped by SIGTTIN with the
# agent waiting on it for ever; the terminal goes back to the agent's group when the trainer
# is gone (the shell after the agent reads it again), and to each restarted trainer; Ctrl-Z
# stops the whole job and fg resumes it; Ctrl-C that kills the trainer ends the run, with no
# restart. script(1) gives each case a pseudo-terminal; the test types into it through a fifo.
. "$(dirname "$0")/lib.sh"

command -v script >/dev/null || { echo "SKIP: no script(1) (util-linux)"; exit 0; }

# Every process a case starts is killed at the end, by its pid: the agents and trainers (the
# trainer writes both), the shells and script itself.
kill_started() {
	local p
	exec 3>&- 2>/dev/null || true
	for p in $(cat "$W"/*.pids 2>/dev/null) ${SPID:-}; do
		kill -KILL "$p" 2>/dev/null || true
	done
}
trap 'rc=$?; kill_started; cleanup $rc' EXIT

# The trainer: says which attempt asks, reads one line from stdin, says what it got; attempt 0
# exits with $1, later ones 0.
cat > reads.py <<'PY'
import os, sys
with open(os.environ["PIDS"], "a") as f:
    f.write(f"{os.getppid()} {os.getpid()}\n")
attempt = os.environ["RESUME_RUN_ATTEMPT"]
print(f"prompt{attempt}>", flush=True)
line = sys.stdin.readline()
print("got", line.strip(), flush=True)
sys.exit(int(sys.argv[1]) if attempt == "0" else 0)
PY

# tty NAME COMMAND: runs COMMAND (sh -c) on a new pseudo-terminal, its typescript in
# NAME.out; type with `printf ... >&3`.
tty() {
	local name=$1
	rm -f "$name.fifo" "$name.out"
	mkfifo "$name.fifo"
	SHELL=/bin/sh PIDS="$W/$name.pids" script -qefc "$2" "$name.out" <"$name.fifo" >"$name.log" 2>&1 &
	SPID=$!
	exec 3>"$name.fifo"
}
# seen NAME PATTERN WHAT: PATTERN appears in NAME's typescript within 20 s.
seen() {
	wait_for 20 grep -qaE -- "$2" "$1.out" 2>/dev/null || {
		cat -v "$1.out" >&2 || true
		fail "$3: no '$2' on the terminal"
	}
}
# tty_end NAME: the session ends by itself (script exits) within 20 s.
tty_end() {
	wait_for 20 sh -c "! kill -0 $SPID 2>/dev/null" || fail "$1: the session did not end"
	wait "$SPID" 2>/dev/null || true
	exec 3>&-
	SPID=
}

rr() { echo "\"$RR_BIN\" --store file://$W/store-$1 --checkpoint-dir $W/ck-$1 --grace 2"; }

# 1. Read from the terminal, fail, read again after the restart; then the shell that ran the
# agent reads the terminal: it has it back.
tty read "$(rr read) --max-restarts 1 -- $PY $W/reads.py 3; echo agent=\$?; read y; echo after=\$y"
seen read 'prompt0>' "the trainer started"
printf 'one\n' >&3
seen read '^got one' "the trainer read a line from the terminal"
ok "the trainer reads stdin from the terminal"
seen read 'prompt1>' "the trainer restarted"
printf 'two\n' >&3
seen read '^got two' "the restarted trainer read a line from the terminal"
ok "the restarted trainer reads it too"
seen read '^agent=0' "the agent finished"
printf 'three\n' >&3
seen read '^after=three' "the shell read the terminal after the agent"
ok "the terminal is back with the agent's shell once the trainer is gone"
tty_end read

# 1b. With no shell with job control above the agent (script's sh -c: an orphaned process
# group, which the kernel does not stop), Ctrl-Z does nothing: the trainer goes on.
tty nojc "$(rr nojc) -- $PY $W/reads.py 0; echo agent=\$?"
seen nojc 'prompt0>' "the trainer started"
printf '\032' >&3 # Ctrl-Z
seen nojc 'Ctrl-Z: no shell with job control' "the agent saw the trainer stop"
printf 'five\n' >&3
seen nojc '^got five' "the trainer went on and read its line"
seen nojc '^agent=0' "the agent finished"
ok "Ctrl-Z with no job control above: the trainer goes on"
tty_end nojc

# 2. An interactive shell with job control: Ctrl-Z stops the job (the shell says so), fg
# resumes it and the trainer then reads its line. (The agent's status is asked for after fg:
# bash goes on with a list once its job stops.)
tty jobs "env PS1='$ ' HISTFILE=$W/bash_history bash --norc --noprofile -i"
printf '%s -- %s %s 0\n' "$(rr jobs)" "$PY" "$W/reads.py" >&3
seen jobs 'prompt0>' "the trainer started"
printf '\032' >&3 # Ctrl-Z
seen jobs 'Stopped' "the shell saw the job stop"
ok "Ctrl-Z stops the job"
printf 'fg\n' >&3
sleep 0.5
printf 'four\n' >&3
seen jobs '^got four' "the trainer read its line after fg"
seen jobs 'trainer exited with status 0' "the trainer finished"
printf 'echo agent2=$?\n' >&3
seen jobs 'agent2=0' "the agent finished"
ok "fg resumes it, with the terminal"

# 3. Ctrl-C kills the trainer, which holds the terminal: the run ends as after SIGINT to the
# agent (75, a notice), and the trainer is not restarted as a failure.
printf '%s --max-restarts 3 -- %s %s 0\n' "$(rr int)" "$PY" "$W/reads.py" >&3
wait_for 20 sh -c "[ \$(grep -ac 'prompt0>' jobs.out) -ge 2 ]" || fail "the second trainer did not start"
printf '\003' >&3 # Ctrl-C
seen jobs 'trainer was killed by SIGINT' "the trainer died of Ctrl-C"
printf 'echo agent3=$?\n' >&3
seen jobs "agent3=$RR_PREEMPTED" "the agent left as after SIGINT"
expect_no_grep 'restarting the trainer' jobs.out "no restart after Ctrl-C"
ok "Ctrl-C that kills the trainer ends the run ($RR_PREEMPTED), no restart"
# 4. The agent started in the background: the trainer that reads the terminal stops the job
# (SIGTTIN, as any background job reading it); fg gives the trainer the terminal.
printf '%s -- %s %s 0 &\n' "$(rr bg)" "$PY" "$W/reads.py" >&3
wait_for 20 sh -c "[ \$(grep -ac 'prompt0>' jobs.out) -ge 3 ]" || fail "the third trainer did not start"
agent=$(tail -n 1 jobs.pids | cut -d' ' -f1)
stopped() { [ "$(sed 's/.*) //' "/proc/$agent/stat" | cut -d' ' -f1)" = T ]; }
wait_for 20 stopped || fail "the agent in the background did not stop when its trainer read the terminal"
ok "a trainer reading the terminal from the background stops the agent's job"
printf 'fg\n' >&3
sleep 0.5
printf 'six\n' >&3
seen jobs '^got six' "the trainer read its line after fg"
wait_for 20 sh -c "! kill -0 $agent 2>/dev/null" || fail "the agent did not finish after fg"
printf 'echo agent4=$?\n' >&3
seen jobs 'agent4=0' "the agent finished"
ok "fg gives the trainer the terminal"
printf 'exit\n' >&3
tty_end jobs

finish
