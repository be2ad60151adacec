#!/usr/bin/env bash
# The CTest fixture of the real-framework tests (frameworks_wheel): builds the wheel from this
# checkout with its own build backend (scikit-build-core running CMake), installs it into a
# fresh venv of Debian's Python, and checks what a user gets from `pip install`: the
# `resume-run` command (the agent, linked against the system's libraries) and the
# `resume_run` module with its integrations. Then the venv is given the pinned frameworks
# (a .pth naming the cached frameworks venv's site-packages, scripts/install-frameworks.sh)
# for the tests that use it: BUILD/wheel-venv.
. "$(dirname "$0")/../integration/lib.sh"
BUILD=$(dirname "$RR_BIN")
FW=$("$RR_SRC/scripts/install-frameworks.sh" --path)
[ -f "$FW/.complete" ] || fail "no frameworks venv at $FW: run scripts/install-deps.sh test (or scripts/install-frameworks.sh)"
unset PYTHONPATH # the module must come from the wheel, not from this checkout
version=$(sed -nE 's/^project\(resume-run VERSION ([0-9.]+).*/\1/p' "$RR_SRC/CMakeLists.txt")

# The wheel: the pinned scikit-build-core of the frameworks venv, no build isolation (nothing
# downloaded); CMake's build tree is kept in BUILD/wheel-build, so a rebuild is incremental.
rm -rf "$BUILD/wheel"
start=$SECONDS
"$FW/bin/pip" wheel --no-build-isolation --no-deps --no-index -w "$BUILD/wheel" \
	--config-settings=build-dir="$BUILD/wheel-build" "$RR_SRC" > wheel.log 2>&1 || fail "pip wheel: $(tail -n 30 wheel.log)"
whl=$(ls "$BUILD"/wheel/resume_run-"$version"-*.whl)
case "$whl" in *-py3-none-linux_x86_64.whl) ;; *) fail "wheel tag: $whl" ;; esac
"$PY" -c 'import sys, zipfile; print("\n".join(sorted(zipfile.ZipFile(sys.argv[1]).namelist())))' "$whl" > contents.txt
for f in resume_run/__init__.py resume_run/hf.py resume_run/lightning.py resume_run/accelerate.py \
	resume_run/dcp.py resume_run/training.py "resume_run-$version.data/scripts/resume-run"; do
	grep -qxF "$f" contents.txt || fail "the wheel lacks $f"
done
ok "$(basename "$whl") built in $((SECONDS - start)) s: resume_run and its integrations, the agent as a script"

# A fresh venv, the wheel alone: the command and the module.
V="$BUILD/wheel-venv"
rm -rf "$V"
"$PY" -m venv "$V"
"$V/bin/pip" install --no-index --no-deps "$whl" > install.log 2>&1 || fail "pip install: $(tail -n 20 install.log)"
"$V/bin/resume-run" --version > version.txt 2>&1 || fail "resume-run --version: $(cat version.txt)"
expect_grep "^resume-run $version( \(git [0-9a-f]+\))?$" version.txt "--version of the installed command"
(cd / && "$V/bin/python" -c 'import resume_run, resume_run.training, sys; print(resume_run.__file__)') > import.txt ||
	fail "import resume_run in the fresh venv"
expect_grep "^$V/lib/python3[.0-9]*/site-packages/resume_run/__init__.py$" import.txt "resume_run from the wheel"
# What the binary links: the system libraries, all found (docs/deploy.md, "Package and builds").
ldd "$V/bin/resume-run" > ldd.txt
expect_no_grep 'not found' ldd.txt "libraries of the installed agent"
for lib in libcrypto libzstd libcjson libxxhash libexpat; do
	expect_grep "^\s$lib\.so" ldd.txt "the agent links the system's $lib"
done
# libcurl is not linked but loaded on the first network request (storage/net/curl_api.c):
# an S3 endpoint nobody listens on gets libcurl's own "Couldn't connect to server".
AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=y AWS_REGION=us-east-1 AWS_ENDPOINT_URL="http://127.0.0.1:$(free_port)" \
	"$V/bin/resume-run" ls --store s3://bucket/wheel > net.txt 2>&1 || true
expect_grep "Couldn't connect to server" net.txt "libcurl loaded by the installed agent"
ok "fresh venv: pip install of the wheel gives $(cat version.txt) and import resume_run; the agent links the system's OpenSSL, zstd, cJSON, xxHash, expat, and loads its libcurl on the first request"

# The frameworks, for the tests that use this venv.
site=$("$V/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
fwsite=$("$FW/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$fwsite" > "$site/resume-run-frameworks.pth"
"$V/bin/python" -c 'import torch, resume_run, sys; print(torch.__version__); sys.exit(0 if resume_run.__file__.startswith(sys.argv[1]) else 1)' "$V/" > torch.txt ||
	fail "the frameworks venv is not usable from $V"
ok "the wheel's venv sees the pinned frameworks (torch $(cat torch.txt)) and still imports resume_run from the wheel"
finish
