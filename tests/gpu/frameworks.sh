#!/usr/bin/env bash
# The real-framework drills of tests/frameworks on a GPU (by hand, on a machine with CUDA and
# the frameworks already installed, e.g. a cloud GPU image): HF Trainer and Lightning train
# on the GPU (RR_TEST_DEVICE=cuda), are preempted by a drill, lose their machine and resume
# on a fresh directory, ending with the weights of an uninterrupted GPU run.
#   tests/gpu/frameworks.sh [path/to/resume-run] [test_hf test_lightning ...]
# The machine's Python (PY, default python3) stands in for the wheel's venv: a directory
# that looks like one (bin/python, bin/resume-run, resume_run from this checkout) is made
# beside the agent, where tests/frameworks/fwlib.sh looks for it.
set -euo pipefail
RR_SRC=$(cd "$(dirname "$0")/../.." && pwd)
RR_BIN=$(cd "$(dirname "${1:-build/resume-run}")" && pwd)/$(basename "${1:-build/resume-run}")
shift || true
PY=$(command -v "${PY:-python3}")
V=$(dirname "$RR_BIN")/wheel-venv
rm -rf "$V"
mkdir -p "$V/bin" "$V/lib"
cp -r "$RR_SRC/python/resume_run" "$V/lib/"
# shellcheck disable=SC2016 # $PYTHONPATH and $@ are the wrapper's, expanded when it runs
printf '#!/bin/sh\nPYTHONPATH="%s${PYTHONPATH:+:$PYTHONPATH}" exec "%s" "$@"\n' "$V/lib" "$PY" > "$V/bin/python"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$RR_BIN" > "$V/bin/resume-run"
chmod +x "$V/bin/python" "$V/bin/resume-run"
RR_TEST_DEVICE=${RR_TEST_DEVICE:-cuda} # cpu: tries this script on a machine without a GPU
export RR_SRC RR_BIN RR_TEST_DEVICE
fail=0
for t in "${@:-test_hf test_lightning}"; do
	for one in $t; do
		echo "== $one on $("$PY" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "the CPU")')"
		bash "$RR_SRC/tests/frameworks/$one.sh" || fail=1
	done
done
exit $fail
