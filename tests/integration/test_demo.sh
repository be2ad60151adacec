#!/usr/bin/env bash
# README's first command, scripts/demo.sh (issue 25), with the agent built here
# (RESUME_RUN_DEMO_BIN skips its install and build): it preempts, restores and finishes;
# it watches no cloud on a machine that has none (no metadata probes); it removes its
# directory however it ends; and an agent that ends before the drill does not leave it
# waiting for ever.
. "$(dirname "$0")/lib.sh"
mkdir tmp
TMPDIR=$W/tmp RESUME_RUN_DEMO_BIN=$RR_BIN timeout 240 bash "$RR_SRC/scripts/demo.sh" > demo.log 2>&1 ||
	fail "the demo failed: $(tail -n 20 demo.log)"
expect_grep '^== exit status 75: preempted, to be resumed$' demo.log "the drill preempted"
expect_grep 'restored step-' demo.log "machine 2 restored"
expect_grep '^== final loss .* apart\)$' demo.log "the demo finished"
# --cloud auto says what its probes found ("cloud: none (no cloud in DMI and no metadata
# service answered)"); RESUME_RUN_CLOUD=none probes nothing and says nothing.
expect_no_grep 'cloud: |metadata service' demo.log "no metadata probes"
expect_eq "$(ls -A tmp)" "" "what the demo left in its TMPDIR"
ok "the demo: drill, exit 75, restore, finish; RESUME_RUN_CLOUD=none; its directory removed"

# An agent that ends at once (here: a stand-in that fails before any checkpoint).
printf '#!/bin/sh\necho "agent: cannot start" >&2\nexit 125\n' > early && chmod +x early
rc=0
TMPDIR=$W/tmp RESUME_RUN_DEMO_BIN=$W/early timeout 60 bash "$RR_SRC/scripts/demo.sh" > early.log 2>&1 || rc=$?
[ "$rc" != 124 ] || fail "the demo still waited after the agent had ended: $(tail -n 5 early.log)"
[ "$rc" != 0 ] || fail "the demo passed with an agent that failed"
expect_grep 'demo: the agent ended \(status 125\) before step 100 was committed' early.log "the demo says why it stopped"
expect_eq "$(ls -A tmp)" "" "what the failed demo left in its TMPDIR"
ok "an agent that ends early: the demo stops (exit $rc) with one line, and removes its directory"
finish
