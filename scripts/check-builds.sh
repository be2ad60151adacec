#!/usr/bin/env bash
# Builds every target in the six combinations a packager or a user may pick (GCC and clang;
# Debug, RelWithDebInfo, Release) with warnings as errors, so a warning that only one
# optimizer level or one compiler shows is caught here and not on their machine.
# Usage: scripts/check-builds.sh [OUT_DIR]   (default build-matrix; JOBS, default nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-matrix}
jobs=${JOBS:-$(nproc)}
failed=0
for cc in gcc clang; do
	for type in Debug RelWithDebInfo Release; do
		dir="$out/$cc-$type"
		log="$out/$cc-$type.log"
		mkdir -p "$dir"
		if CC=$cc cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DRR_WERROR=ON >"$log" 2>&1 &&
		   cmake --build "$dir" -j"$jobs" >>"$log" 2>&1; then
			warnings=$(grep -c 'warning:' "$log" || true)
			echo "$cc $type: ok ($warnings warnings)"
		else
			echo "$cc $type: FAILED (see $log)"
			grep -E 'error:|warning:' "$log" | head -n 20
			failed=1
		fi
	done
done
exit $failed
