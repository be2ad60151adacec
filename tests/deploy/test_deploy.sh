#!/usr/bin/env bash
# The deployment files and the package, each checked with the real tool that consumes it:
# cloud-init's schema check on each user-data, systemd-analyze verify on the unit, the
# ShellCheck linter on every shell script (the embedded bootstrap scripts too), the
# Kubernetes Job's fields, the sbatch directives, `cmake --install`, and the .deb: its
# Depends, its files in an empty root, and `resume-run --version` from there.
. "$(dirname "$0")/../integration/lib.sh"
D="$RR_SRC/scripts/deploy"
BUILD=$(dirname "$RR_BIN")
[ -f "$BUILD/CPackConfig.cmake" ] || fail "no CPackConfig.cmake beside $RR_BIN"
version=$(sed -nE 's/^project\(resume-run VERSION ([0-9.]+).*/\1/p' "$RR_SRC/CMakeLists.txt")

# --- cloud-init user-data: schema, and the embedded unit and bootstrap script ---
embedded() { # YAML PATH-SUFFIX: prints the content of the write_files entry
	"$PY" -c 'import sys, yaml
for w in yaml.safe_load(open(sys.argv[1]))["write_files"]:
    if w["path"].endswith(sys.argv[2]):
        sys.stdout.write(w["content"])' "$1" "$2"
}
for cloud in aws azure; do
	f="$D/cloud-init/$cloud.yaml"
	cloud-init schema --config-file "$f" > "ci-$cloud.log" 2>&1 || fail "cloud-init schema $cloud.yaml: $(cat "ci-$cloud.log")"
	expect_grep '^Valid cloud-config' "ci-$cloud.log" "cloud-init on $cloud.yaml"
	embedded "$f" resume-run@.service > "unit-$cloud"
	cmp -s "unit-$cloud" "$D/systemd/resume-run@.service" || fail "$cloud.yaml's unit differs from systemd/resume-run@.service"
	embedded "$f" resume-run-bootstrap > "boot-$cloud.sh"
	shellcheck -s bash "boot-$cloud.sh" || fail "shellcheck on $cloud.yaml's bootstrap script"
	expect_grep "RESUME_RUN_CLOUD=$cloud" "$f" "$cloud.yaml watches $cloud"
	expect_grep 'start_run "\$\(tag resume-run-store\)" "\$\(tag resume-run-id\)"' "boot-$cloud.sh" "$cloud: store and run id from the metadata"
done
# Azure's default store is az:// with the VM's managed identity: the bootstrap's start_run
# (run here with /etc/resume-run moved under $W and systemctl stubbed) writes the account
# from the tag resume-run-storage-account, and refuses an az:// store without one.
expect_grep 'resume-run-store=az://' "$D/cloud-init/azure.yaml" "azure.yaml's example store is az://"
expect_grep 'Storage Blob Data Contributor' "$D/cloud-init/azure.yaml" "azure.yaml grants the VM's identity the store"
expect_no_grep '^ *AZURE_STORAGE_(KEY|CONNECTION_STRING|SAS_TOKEN)=' "$D/cloud-init/azure.yaml" "no storage key in azure.yaml"

# --- the bootstrap (GCP's startup-script, the user-data's embedded scripts) ---
# GCP's Debian images run no cloud-init: its startup-script stands alone, and shares its
# functions with the user-data's bootstraps, word for word.
gcp="$D/gcp/startup-script.sh"
shellcheck -s bash "$gcp" || fail "shellcheck on gcp/startup-script.sh"
functions() { sed -n '/^\(install_resume_run\|check_trainer\|start_run\)() {$/,/^}$/p' "$1"; }
functions "$gcp" > fn-gcp.sh
[ "$(grep -c '() {$' fn-gcp.sh)" = 3 ] || fail "gcp/startup-script.sh lacks the bootstrap's functions"
for cloud in aws azure; do
	functions "boot-$cloud.sh" > "fn-$cloud.sh"
	cmp -s fn-gcp.sh "fn-$cloud.sh" || fail "$cloud.yaml's bootstrap functions differ from gcp/startup-script.sh's: $(diff fn-gcp.sh "fn-$cloud.sh" | head -n 20)"
done
expect_no_grep 'github\.com/example|example\.com' "$gcp" "no made-up source URL (gcp)"
for cloud in aws azure; do
	expect_no_grep 'github\.com/example|example\.com' "$D/cloud-init/$cloud.yaml" "no made-up source URL ($cloud)"
	expect_no_grep '^ *TRAINER_COMMAND=' "$D/cloud-init/$cloud.yaml" "no default trainer command nothing installs ($cloud)"
done
# The startup-script run for real, as root at boot, with / moved under $W/gcproot, systemctl
# and the metadata server stood in for, and resume-run "installed": nothing but itself
# (no write_files) makes the unit, trainer.env and train.env.
mkdir -p gcproot/etc/systemd/system stub
printf '#!/bin/sh\necho "$*" >> %s/systemctl.log\n' "$W" > stub/systemctl
printf '#!/bin/sh\nexit 0\n' > stub/resume-run
chmod +x stub/systemctl stub/resume-run
sed "s#/etc/#$W/gcproot/etc/#g" "$gcp" > gcp-boot.sh
printf 'print("train")\n' > "$W/train.py"
cat > meta.sh <<META
tag() { case \$1 in resume-run-store) echo gs://b/runs ;; resume-run-id) echo exp1 ;; resume-run-command) echo "python3 $W/train.py" ;; esac; }
META
# shellcheck source=/dev/null # made above
(export PATH="$W/stub:$PATH" RR_BOOTSTRAP_FUNCTIONS_ONLY=1 && . ./gcp-boot.sh && . ./meta.sh && main) > gcp-boot.log 2>&1 ||
	fail "gcp startup-script: $(cat gcp-boot.log)"
sed "s#/etc/#$W/gcproot/etc/#g" "$D/systemd/resume-run@.service" > unit-moved
cmp -s gcproot/etc/systemd/system/resume-run@.service unit-moved || fail "the startup-script's unit differs from systemd/resume-run@.service"
expect_eq "$(stat -c %a gcproot/etc/resume-run/trainer.env)" 600 "trainer.env's mode"
expect_eq "$(stat -c '%a %U' gcproot/etc/resume-run/train.env)" "600 $(id -un)" "train.env's mode and owner (it may hold store keys)"
expect_grep '^RESUME_RUN_STORE=gs://b/runs$' gcproot/etc/resume-run/train.env "gcp: the store"
expect_grep '^RESUME_RUN_ID=exp1$' gcproot/etc/resume-run/train.env "gcp: the run id"
expect_grep "^TRAINER_COMMAND=python3 $W/train.py$" gcproot/etc/resume-run/train.env "gcp: the trainer command"
expect_grep '^RESUME_RUN_CLOUD=gcp$' gcproot/etc/resume-run/train.env "gcp: the cloud"
expect_grep '^enable --now resume-run@train.service$' systemctl.log "gcp: the unit started"
ok "gcp/startup-script.sh stands alone: unit, trainer.env and train.env (0600) from the metadata, unit started"

# Each refusal: one line saying what to set. start_run and install_resume_run of the shared
# functions, with /etc/resume-run under $W/etc.
sed "s#/etc/resume-run#$W/etc#g" fn-gcp.sh > fns.sh
mkdir -p etc
# shellcheck source=/dev/null disable=SC2317 # fns.sh is made above; systemctl is called there
boot() { (PATH="$W/stub:/usr/bin:/bin" && systemctl() { :; } && . ./fns.sh && "$@"); }
printf 'RESUME_RUN_CLOUD=azure\n' > etc/trainer.env
install -m 0644 /dev/null etc/train.env # left by an earlier bootstrap, readable by all
boot start_run az://ckpt/runs exp1 "python3 $W/train.py" mystorageacct || fail "azure start_run"
expect_grep '^RESUME_RUN_STORE=az://ckpt/runs$' etc/train.env "azure: the store"
expect_grep '^AZURE_STORAGE_ACCOUNT=mystorageacct$' etc/train.env "azure: the storage account"
expect_eq "$(stat -c %a etc/train.env)" 600 "train.env's mode, over one that was 0644"
refused() { # WHAT EXPECTED-LINE CMD...
	local what=$1 want=$2
	shift 2
	boot "$@" > refused.log 2>&1 && fail "the bootstrap accepted $what"
	expect_grep "$want" refused.log "the bootstrap's refusal of $what"
}
refused "az:// without a storage account" 'needs the tag resume-run-storage-account' \
	start_run az://ckpt/runs exp1 "python3 $W/train.py" ""
refused "no trainer command" '^resume-run-bootstrap: no trainer command: give the instance resume-run-command' \
	start_run gs://b/runs exp1 ""
refused "a trainer whose code is not there" '^resume-run-bootstrap: the trainer command names /opt/train/train.py, which is not on this machine' \
	start_run gs://b/runs exp1 "python3 /opt/train/train.py"
refused "a trainer program not installed" "^resume-run-bootstrap: the trainer command's program 'no-such-trainer' is not installed" \
	start_run gs://b/runs exp1 "no-such-trainer --x"
printf 'TRAINER_COMMAND=python3 %s/train.py\n' "$W" >> etc/trainer.env
boot start_run gs://b/runs exp1 "" || fail "start_run with TRAINER_COMMAND in trainer.env"
expect_eq "$(grep -c '^TRAINER_COMMAND=' etc/train.env)" 1 "one TRAINER_COMMAND in train.env"
rm stub/resume-run
refused "no source for resume-run" '^resume-run-bootstrap: where resume-run comes from is not set: give the instance resume-run-deb .* or resume-run-git' \
	install_resume_run "" ""
ok "azure.yaml: az:// with the VM's managed identity by default (the account from a tag, no key)"

# The tool does reject what is wrong (so "valid" above means something).
sed 's/^runcmd:$/runcmd: 5\nunused:/' "$D/cloud-init/aws.yaml" > bad.yaml
! cloud-init schema --config-file bad.yaml > bad-ci.log 2>&1 || fail "cloud-init accepted a broken user-data"
expect_grep "runcmd: 5 is not of type 'array'" bad-ci.log "cloud-init's complaint"
ok "cloud-init schema: aws.yaml, azure.yaml valid; each embeds the unit and a shellcheck-clean bootstrap"

# --- systemd unit ---
unit="$D/systemd/resume-run@.service"
# The unit as `cmake --install` makes it for a prefix: ExecStart names the binary it installs
# there (the checked-in unit, the .deb's, says /usr/bin; a plain install puts it in
# /usr/local/bin). systemd-analyze checks that the binary is there.
cmake --install "$BUILD" --prefix "$W/unit-prefix" > unit-install.log 2>&1 || fail "cmake --install: $(cat unit-install.log)"
installed_unit="$W/unit-prefix/lib/systemd/system/resume-run@.service"
[ -f "$installed_unit" ] || fail "cmake --install put no unit in lib/systemd/system"
expect_grep "^ExecStart=$W/unit-prefix/bin/resume-run --grace " "$installed_unit" "the installed unit runs the installed binary"
[ -x "$W/unit-prefix/bin/resume-run" ] || fail "no $W/unit-prefix/bin/resume-run"
expect_eq "$(sed '/^ExecStart=/d' "$installed_unit" | md5sum)" "$(sed '/^ExecStart=/d' "$unit" | md5sum)" "the installed unit, but for ExecStart"
mkdir unit && cp "$installed_unit" unit/
systemd-analyze verify "$W/unit/resume-run@exp1.service" > verify.log 2>&1 || fail "systemd-analyze verify: $(cat verify.log)"
[ ! -s verify.log ] || fail "systemd-analyze verify complained: $(cat verify.log)"
sed 's/^KillMode=mixed/KillMode=bogus/' unit/resume-run@.service > unit/bad@.service
systemd-analyze verify "$W/unit/bad@x.service" > verify-bad.log 2>&1 || true
expect_grep 'Failed to parse kill mode' verify-bad.log "systemd-analyze notices a bad KillMode"
grace=$(sed -nE 's/^Environment=RESUME_RUN_GRACE=([0-9]+)$/\1/p' "$unit")
stop=$(sed -nE 's/^TimeoutStopSec=([0-9]+)$/\1/p' "$unit")
[ -n "$grace" ] && [ -n "$stop" ] && [ "$stop" -gt "$grace" ] || fail "TimeoutStopSec ($stop) must be above the grace ($grace)"
expect_grep '^KillMode=mixed$' "$unit" "KillMode=mixed"
expect_grep '^Restart=on-failure$' "$unit" "Restart=on-failure"
expect_grep '^ExecStart=/usr/bin/resume-run --grace \$\{RESUME_RUN_GRACE\} -- ' "$unit" "ExecStart passes the grace (the .deb's path)"
ok "systemd-analyze verify: resume-run@.service clean; KillMode=mixed, TimeoutStopSec $stop > grace $grace, Restart=on-failure"

# --- shellcheck on every shell script of the repository ---
cd "$RR_SRC"
if [ -d .git ] || [ -f .git ]; then
	mapfile -t files < <(git ls-files | sort)
else
	mapfile -t files < <(find . -type f -not -path './build*' -not -path './.git/*' | sed 's#^\./##' | sort)
fi
scripts=()
for f in "${files[@]}"; do
	[ -f "$f" ] || continue
	case "$f" in
	*.sh | *.sbatch) scripts+=("$f") ;;
	*) head -n 1 "$f" | grep -qE '^#!.*\b(ba|da)?sh\b' && scripts+=("$f") ;;
	esac
done
cd "$W"
[ "${#scripts[@]}" -ge 20 ] || fail "only ${#scripts[@]} shell scripts found"
(cd "$RR_SRC" && shellcheck -x -s bash "${scripts[@]}") > shellcheck.log 2>&1 || fail "shellcheck: $(head -n 40 shellcheck.log)"
ok "shellcheck: ${#scripts[@]} shell scripts clean"

# --- Kubernetes Job ---
"$PY" "$RR_SRC/tests/deploy/check_k8s_job.py" "$D/k8s/job.yaml" || fail "k8s/job.yaml"
ok "k8s Job: podFailurePolicy ignores exit 75 and DisruptionTarget, grace below the pod's, IRSA and Workload Identity"

# --- Slurm batch script (the real flow: tests/deploy/test_slurm.sh) ---
sb="$D/slurm/train.sbatch"
bash -n "$sb" || fail "train.sbatch does not parse"
expect_grep '^#SBATCH --signal=B:TERM@120$' "$sb" "signal 120 s before the limit"
expect_grep '^#SBATCH --requeue$' "$sb" "requeue"
sgrace=$(sed -nE 's/^grace=\$\{RESUME_RUN_GRACE:-([0-9]+)\}.*/\1/p' "$sb")
[ -n "$sgrace" ] && [ "$sgrace" -lt 120 ] || fail "sbatch grace '$sgrace' must be below 120"
ok "train.sbatch: --signal=B:TERM@120, --requeue, grace $sgrace < 120"

# --- cmake --install ---
cmake --install "$BUILD" --prefix "$W/inst" > install.log 2>&1 || fail "cmake --install: $(cat install.log)"
[ -x inst/bin/resume-run ] || fail "no bin/resume-run"
# The package, file for file as in python/resume_run (the wheel's and the image's too).
pkg_files=$(cd "$RR_SRC/python/resume_run" && ls -- *.py | sort | tr '\n' ' ')
expect_eq "$(cd inst/lib/python3/dist-packages/resume_run && ls | sort | tr '\n' ' ')" "$pkg_files" "lib/python3/dist-packages/resume_run/"
# /usr/local: the versioned dist-packages that Debian's Python searches there.
DESTDIR="$W/dest" cmake --install "$BUILD" --prefix /usr/local > install2.log 2>&1 || fail "cmake --install /usr/local"
pydir=$(cd dest && ls -d usr/local/lib/python3*/dist-packages)
[ -f "dest/$pydir/resume_run/__init__.py" ] || fail "no resume_run/ under /usr/local"
/usr/bin/python3 -c 'import sys; sys.exit(0 if sys.argv[1] in sys.path else 1)' "/$pydir" || fail "/$pydir is not on Debian's Python path"
ok "cmake --install: bin/resume-run; the resume_run package in lib/python3/dist-packages (/usr) and /$pydir (/usr/local, on sys.path)"

# --- the .deb ---
(cd "$BUILD" && cpack -G DEB -B "$W/pkg") > cpack.log 2>&1 || fail "cpack: $(tail -n 20 cpack.log)"
deb=$(ls pkg/resume-run_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for p in libc6 libcurl4 libssl3 libzstd1 libcjson1 libxxhash0 libexpat1; do
	echo "$depends" | grep -qE "(^|, )$p( |,|$)" || fail "Depends lacks $p: $depends"
done
# ...and nothing else: each soname the binary needs maps to one of these packages.
n=$(echo "$depends" | tr ',' '\n' | grep -c .)
expect_eq "$n" 7 "number of Depends"
expect_eq "$(dpkg-deb -f "$deb" Package)" resume-run "package name"
expect_eq "$(dpkg-deb -f "$deb" Version)" "$version" "package version"
mkdir root
dpkg -x "$deb" root
(cd root && find . -type f | sort) > files.txt
expect_eq "$(tr '\n' ' ' < files.txt)" "./usr/bin/resume-run $(for f in $pkg_files; do printf './usr/lib/python3/dist-packages/resume_run/%s ' "$f"; done)./usr/lib/systemd/system/resume-run@.service ./usr/share/doc/resume-run/changelog.gz ./usr/share/doc/resume-run/copyright " "files in the package"
cmp -s root/usr/lib/systemd/system/resume-run@.service "$unit" || fail "the .deb's unit is not systemd/resume-run@.service (ExecStart=/usr/bin/resume-run)"
expect_eq "$(stat -c %a root/usr/share/doc/resume-run/copyright)" 644 "the copyright file's mode"
# Stripped: no symbol table, no debug sections.
if readelf -S root/usr/bin/resume-run | grep -qE '\.(symtab|debug_)'; then
	fail "the .deb's binary is not stripped: $(readelf -S root/usr/bin/resume-run | grep -E '\.(symtab|debug_)' | head -n 3)"
fi
# lintian, Debian's package checker: nothing but tests/deploy/lintian-allowed (the maintainer
# address is a placeholder until the project has one; no manual page yet; no licence chosen;
# the changelog is CHANGELOG.md, not in Debian's changelog format).
lintian --no-tag-display-limit "$deb" > lintian.log 2>&1 || true
grep -E '^[EW]: ' lintian.log | sed -E 's/^([EW]): [^:]+: ([^ ]+).*/\1 \2/' | sort -u > lintian-tags.txt
unexpected=$(grep -vxF -f "$RR_SRC/tests/deploy/lintian-allowed" lintian-tags.txt || true)
[ -z "$unexpected" ] || fail "lintian: $(grep -F -f <(cut -d' ' -f2 <<< "$unexpected") lintian.log | head -n 20)"
root/usr/bin/resume-run --version > version.txt
expect_grep "^resume-run $version( \(git [0-9a-f]+\))?$" version.txt "--version from the unpacked package"
if git -C "$RR_SRC" rev-parse HEAD > /dev/null 2>&1; then
	expect_grep '\(git [0-9a-f]{12}\)$' version.txt "the commit in --version"
fi
PYTHONPATH="$W/root/usr/lib/python3/dist-packages" /usr/bin/python3 -c 'import resume_run, resume_run.training, sys; sys.exit(0 if resume_run.__file__.startswith(sys.argv[1]) else 1)' "$W/root/" ||
	fail "import resume_run from the unpacked package"
ok "$(basename "$deb"): Depends $depends; the unit, the copyright file, a stripped binary, lintian clean of errors; unpacked into an empty root, $(cat version.txt); import resume_run works"
finish
