#!/usr/bin/env bash
# Installs Azurite 3.37.0 (Microsoft's Azure Storage emulator, npm "azurite") into
# RR_AZURITE_DIR (default /var/tmp/resume-run-azurite), once, outside the repository. Prints
# nothing when it is already there.
set -euo pipefail
dir=${RR_AZURITE_DIR:-/var/tmp/resume-run-azurite}
if [ -f "$dir/node_modules/azurite/package.json" ] &&
   grep -q '"version": "3.37.0"' "$dir/node_modules/azurite/package.json"; then
	exit 0
fi
mkdir -p "$dir"
echo "installing azurite@3.37.0 into $dir"
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error azurite@3.37.0 >/dev/null)
