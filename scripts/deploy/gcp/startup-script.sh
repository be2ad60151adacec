#!/bin/bash
# resume-run on a GCE Spot VM, as its startup-script: it stands alone (Debian's GCE images
# run startup-scripts, not cloud-init), and runs as root at every boot. Create the VM with:
#   gcloud compute instances create train-1 --provisioning-model=SPOT \
#     --instance-termination-action=STOP --image-family=debian-12 --image-project=debian-cloud \
#     --service-account=trainer@my-project.iam.gserviceaccount.com --scopes=cloud-platform \
#     --metadata=resume-run-store=gs://my-bucket/runs,resume-run-id=exp1,resume-run-deb=https://.../resume-run_0.2.0_amd64.deb \
#     --metadata='resume-run-command=python3 /opt/train/train.py' \
#     --metadata-from-file=startup-script=scripts/deploy/gcp/startup-script.sh
# Required metadata: resume-run-store, resume-run-id, resume-run-command (the trainer
# command; its code must be on the image), and resume-run-deb (URL of a resume-run .deb) or
# resume-run-git (URL of a resume-run git repository, built on the VM). Agent options and
# store credentials: /etc/resume-run/trainer.env (made here once, mode 0600).
# The agent waits on the metadata server's preempted flag (30 s notice) and maintenance
# events; the service account's token from the metadata server reaches the gs:// store.
set -euo pipefail

# The unit, as scripts/deploy/systemd/resume-run@.service (tests/deploy checks they agree).
write_unit() {
	cat > /etc/systemd/system/resume-run@.service <<'UNIT'
# resume-run@NAME.service: one training run under resume-run, configured by
# /etc/resume-run/NAME.env (RESUME_RUN_STORE=..., TRAINER_COMMAND=..., any RESUME_RUN_*).
#   systemctl enable --now resume-run@exp1
# The instance name is the default run id (RESUME_RUN_ID in the file overrides it).
[Unit]
Description=resume-run training run %i
Documentation=man:systemd.service(5)
Wants=network-online.target
After=network-online.target
# Five failed starts in ten minutes: stop trying (a broken store URL, a missing trainer).
StartLimitIntervalSec=600
StartLimitBurst=5

[Service]
Type=exec
Environment=RESUME_RUN_ID=%i
Environment=RESUME_RUN_GRACE=100
Environment=RESUME_RUN_CHECKPOINT_DIR=/var/lib/resume-run/%i/checkpoints
EnvironmentFile=/etc/resume-run/%i.env
StateDirectory=resume-run/%i
WorkingDirectory=/var/lib/resume-run/%i
# TRAINER_COMMAND is split on whitespace ($VAR, not ${VAR}): no quoting inside it.
ExecStart=/usr/bin/resume-run --grace ${RESUME_RUN_GRACE} -- $TRAINER_COMMAND
# `systemctl stop` and shutdown: SIGTERM to the agent alone (a notice: it asks the trainer
# for a checkpoint, makes it durable within --grace, then stops the trainer); SIGKILL to
# everything left only after TimeoutStopSec, which stays above the grace.
KillMode=mixed
KillSignal=SIGTERM
TimeoutStopSec=130
# A failed trainer (after the agent's own --max-restarts) or a preempted run (exit 75, when
# the notice came from the cloud and the machine lives on) starts again and restores.
Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
UNIT
	chmod 0644 /etc/systemd/system/resume-run@.service
}

# Agent options and store credentials; kept when it exists (yours to edit).
write_trainer_env() {
	install -d -m 0755 /etc/resume-run
	[ ! -f /etc/resume-run/trainer.env ] || return 0
	(
		umask 077
		cat > /etc/resume-run/trainer.env <<'ENV'
# The trainer and agent options (any RESUME_RUN_*, store credentials). The bootstrap adds
# RESUME_RUN_STORE, RESUME_RUN_ID and TRAINER_COMMAND from the metadata (resume-run-store,
# resume-run-id, resume-run-command; or TRAINER_COMMAND=... here), and writes the result to
# /etc/resume-run/train.env, mode 0600, root's.
RESUME_RUN_CLOUD=gcp
RESUME_RUN_GRACE=25
ENV
	)
}

# Installs resume-run: the .deb at $1 (a URL), else built from the git repository at $2.
# One of them is required: nothing here guesses where resume-run comes from.
install_resume_run() {
	local deb_url=$1 git_url=$2
	export DEBIAN_FRONTEND=noninteractive
	if command -v resume-run >/dev/null 2>&1; then
		return 0
	fi
	if [ -n "$deb_url" ]; then
		curl -fsSL --retry 5 -o /tmp/resume-run.deb "$deb_url"
		apt-get install -y -q /tmp/resume-run.deb
	elif [ -n "$git_url" ]; then
		apt-get install -y -q --no-install-recommends git
		git clone --depth 1 "$git_url" /opt/resume-run-src
		/opt/resume-run-src/scripts/install-deps.sh build
		cmake -S /opt/resume-run-src -B /opt/resume-run-src/build -DCMAKE_BUILD_TYPE=Release
		cmake --build /opt/resume-run-src/build -j"$(nproc)" --target resume-run
		(cd /opt/resume-run-src/build && cpack -G DEB)
		apt-get install -y -q /opt/resume-run-src/build/resume-run_*.deb
	else
		echo "resume-run-bootstrap: where resume-run comes from is not set: give the instance resume-run-deb (the URL of a resume-run .deb) or resume-run-git (the URL of a resume-run git repository)" >&2
		exit 1
	fi
}

# Checks the trainer command: set, its program installed, and every absolute path in it
# present (the training code is yours to put on the machine: the image, or write_files).
check_trainer() {
	local cmd=$1 word
	local -a words
	if [ -z "$cmd" ]; then
		echo "resume-run-bootstrap: no trainer command: give the instance resume-run-command (e.g. 'python3 /opt/train/train.py', that file on the machine) or set TRAINER_COMMAND in /etc/resume-run/trainer.env" >&2
		exit 1
	fi
	read -r -a words <<< "$cmd"
	if ! command -v "${words[0]}" >/dev/null 2>&1; then
		echo "resume-run-bootstrap: the trainer command's program '${words[0]}' is not installed" >&2
		exit 1
	fi
	for word in "${words[@]:1}"; do
		case $word in
		/*)
			if [ ! -e "$word" ]; then
				echo "resume-run-bootstrap: the trainer command names $word, which is not on this machine: put the training code there first (the image, or write_files)" >&2
				exit 1
			fi
			;;
		esac
	done
}

# Writes the run's environment file (mode 0600, root: it may hold store keys) and starts the
# unit. $1 store, $2 run id, $3 trainer command (else TRAINER_COMMAND of trainer.env), $4 the
# storage account of an az:// store.
start_run() {
	local store=$1 run_id=$2 cmd=$3 account=${4:-} conf=/etc/resume-run
	if [ -z "$store" ] || [ -z "$run_id" ]; then
		echo "resume-run-bootstrap: no store or run id in the instance's metadata (resume-run-store, resume-run-id)" >&2
		exit 1
	fi
	case $store in
	az://*)
		if [ -z "$account" ]; then
			echo "resume-run-bootstrap: an az:// store needs the tag resume-run-storage-account" >&2
			exit 1
		fi
		;;
	esac
	if [ -z "$cmd" ] && [ -f "$conf/trainer.env" ]; then
		cmd=$(sed -n 's/^TRAINER_COMMAND=//p' "$conf/trainer.env" | tail -n 1)
	fi
	check_trainer "$cmd"
	install -d -m 0755 "$conf"
	(
		umask 077
		{
			[ ! -f "$conf/trainer.env" ] || grep -v '^TRAINER_COMMAND=' "$conf/trainer.env"
			printf 'RESUME_RUN_STORE=%s\n' "$store"
			printf 'RESUME_RUN_ID=%s\n' "$run_id"
			printf 'TRAINER_COMMAND=%s\n' "$cmd"
			[ -z "$account" ] || printf 'AZURE_STORAGE_ACCOUNT=%s\n' "$account"
		} > "$conf/train.env.new"
	)
	chmod 0600 "$conf/train.env.new"
	mv -f "$conf/train.env.new" "$conf/train.env"
	systemctl daemon-reload
	systemctl enable --now resume-run@train.service
}

# Custom metadata of the instance; an absent key is a 404: empty.
tag() {
	curl -fsS -H 'Metadata-Flavor: Google' \
		"http://metadata.google.internal/computeMetadata/v1/instance/attributes/$1" || true
}

main() {
	command -v curl >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q ca-certificates curl; }
	write_unit
	write_trainer_env
	install_resume_run "$(tag resume-run-deb)" "$(tag resume-run-git)"
	start_run "$(tag resume-run-store)" "$(tag resume-run-id)" "$(tag resume-run-command)"
}

# RR_BOOTSTRAP_FUNCTIONS_ONLY=1: define the functions, run nothing (tests/deploy).
[ -n "${RR_BOOTSTRAP_FUNCTIONS_ONLY:-}" ] || main
