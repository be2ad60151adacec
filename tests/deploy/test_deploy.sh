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
for cloud in aws gcp azure; do
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
sed -n '/^start_run() {$/,/^}$/p' boot-azure.sh | sed "s#/etc/resume-run#$W/etc#g" > start_run.sh
mkdir -p etc && echo 'TRAINER_COMMAND=python3 train.py' > etc/trainer.env
(systemctl() { :; }; . ./start_run.sh; start_run az://ckpt/runs exp1 mystorageacct) || fail "azure start_run"
expect_grep '^RESUME_RUN_STORE=az://ckpt/runs$' etc/train.env "azure: the store"
expect_grep '^AZURE_STORAGE_ACCOUNT=mystorageacct$' etc/train.env "azure: the storage account"
(systemctl() { :; }; . ./start_run.sh; start_run az://ckpt/runs exp1 "") > no-account.log 2>&1 &&
	fail "azure start_run accepted az:// without a storage account"
expect_grep 'needs the tag resume-run-storage-account' no-account.log "azure: the refusal"
ok "azure.yaml: az:// with the VM's managed identity by default (the account from a tag, no key)"

# The tool does reject what is wrong (so "valid" above means something).
sed 's/^runcmd:$/runcmd: 5\nunused:/' "$D/cloud-init/aws.yaml" > bad.yaml
! cloud-init schema --config-file bad.yaml > bad-ci.log 2>&1 || fail "cloud-init accepted a broken user-data"
expect_grep "runcmd: 5 is not of type 'array'" bad-ci.log "cloud-init's complaint"
ok "cloud-init schema: aws.yaml, gcp.yaml, azure.yaml valid; each embeds the unit and a shellcheck-clean bootstrap"

# --- systemd unit ---
unit="$D/systemd/resume-run@.service"
mkdir unit && sed "s#^ExecStart=/usr/bin/resume-run #ExecStart=$RR_BIN #" "$unit" > unit/resume-run@.service
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
expect_grep '^ExecStart=/usr/bin/resume-run --grace \$\{RESUME_RUN_GRACE\} -- ' "$unit" "ExecStart passes the grace"
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
expect_eq "$(tr '\n' ' ' < files.txt)" "./usr/bin/resume-run $(for f in $pkg_files; do printf './usr/lib/python3/dist-packages/resume_run/%s ' "$f"; done)" "files in the package"
root/usr/bin/resume-run --version > version.txt
expect_grep "^resume-run $version( \(git [0-9a-f]+\))?$" version.txt "--version from the unpacked package"
if git -C "$RR_SRC" rev-parse HEAD > /dev/null 2>&1; then
	expect_grep '\(git [0-9a-f]{12}\)$' version.txt "the commit in --version"
fi
PYTHONPATH="$W/root/usr/lib/python3/dist-packages" /usr/bin/python3 -c 'import resume_run, resume_run.training, sys; sys.exit(0 if resume_run.__file__.startswith(sys.argv[1]) else 1)' "$W/root/" ||
	fail "import resume_run from the unpacked package"
ok "$(basename "$deb"): Depends $depends; unpacked into an empty root, $(cat version.txt); import resume_run works"
finish
