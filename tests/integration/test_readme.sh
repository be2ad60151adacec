#!/usr/bin/env bash
# README's first screen, as a newcomer runs it (issue 25): the agent installed with the
# command README gives (cmake --install, here into a prefix of the test's own) and found on
# PATH, then README's drill block run as it is, from the clone: exit 75 after the drill,
# the machine lost, the same command restores and finishes.
. "$(dirname "$0")/lib.sh"
README="$RR_SRC/README.md"
BUILD=$(dirname "$RR_BIN")

# The block after the marker line, between its ``` fences.
block() {
	awk -v m="$1" 'index($0, m) { on = 1; next } on && /^```/ { if (in_block) exit; in_block = 1; next } in_block { print }' "$README"
}
expect_grep '^sudo cmake --install build ' "$README" "README's install step"
cmake --install "$BUILD" --prefix "$W/prefix" > install.log 2>&1 || fail "cmake --install: $(cat install.log)"
export PATH="$W/prefix/bin:$PATH"
[ "$(command -v resume-run)" = "$W/prefix/bin/resume-run" ] || fail "resume-run is not the installed one on PATH"

block '<!-- README drill:' > drill.sh
[ "$(wc -l < drill.sh)" -ge 5 ] || fail "no drill block in README: $(cat drill.sh)"
grep -q '^resume-run ' drill.sh || fail "README's drill does not run resume-run from PATH"
# From the clone (a copy: the drill writes nothing there, but the test must not rely on it).
mkdir clone && cp -a "$RR_SRC/scripts" clone/ && cp -a "$RR_SRC/python" clone/
(cd clone && TMPDIR=$W timeout 240 bash "$W/drill.sh") > drill.log 2>&1 < /dev/null ||
	fail "README's drill failed: $(tail -n 20 drill.log)"
expect_grep '^exit status 75$' drill.log "the drill's first run: preempted"
expect_grep 'notice: preempt from file' drill.log "the drill file was the notice"
expect_grep 'restored step-' drill.log "the second run restored"
expect_grep '^done step 400 ' drill.log "the second run finished"
expect_no_grep 'is deprecated' drill.log "README uses the current option names"
ok "README: cmake --install puts resume-run on PATH; its drill preempts (75), restores on a fresh directory and finishes"
finish
