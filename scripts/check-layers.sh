#!/usr/bin/env bash
# Folders are layers (README, "Code layout"): a source file may include headers of its own
# folder and of the folders below it, never one above or beside. Fails with one line per
# include that breaks the order, so the layers cannot drift back together.
set -euo pipefail
cd "$(dirname "$0")/.."

# folder: the folders it may include from (besides itself). Lowest first.
declare -A below=(
	[storage/common]=""
	[storage/net]="storage/common"
	[storage/auth]="storage/net storage/common"
	[storage/format]="storage/common"
	[storage/store]="storage/auth storage/net storage/common"
	[cloud]="storage/net storage/common"
	[agent/catalog]="storage/store storage/format storage/auth storage/net storage/common"
	[agent/pipeline]="agent/catalog storage/store storage/format storage/auth storage/net storage/common"
	[agent/run]="agent/pipeline agent/catalog cloud storage/store storage/format storage/auth storage/net storage/common"
	[agent/cli]="agent/run agent/pipeline agent/catalog cloud storage/store storage/format storage/auth storage/net storage/common"
)
# Public headers without a .c of the same name, and the folder they belong to.
declare -A header_home=(
	[clock]=storage/common
	[version]=storage/common
	[env]=storage/common
)

bad=0
complain() { echo "check-layers: $*" >&2; bad=1; }

# The folder that owns a public header include/rr/NAME.h: the one holding NAME.c.
declare -A home
for folder in "${!below[@]}"; do
	for c in "$folder"/*.c; do
		[[ -e "$c" ]] || continue
		home[$(basename "$c" .c)]=$folder
	done
done
for m in "${!header_home[@]}"; do home[$m]=${header_home[$m]}; done

for h in include/rr/*.h; do
	m=$(basename "$h" .h)
	[[ -n "${home[$m]:-}" ]] || complain "$h: no folder owns it (add its .c, or list it in header_home)"
done
# Every folder with C files must be a layer.
while read -r d; do
	[[ -n "${below[$d]+x}" ]] || complain "$d: holds C files but is not a layer in scripts/check-layers.sh"
done < <(find agent storage cloud -name '*.[ch]' -printf '%h\n' | sort -u)

# Checks one file's quoted includes; $2 is the folder whose rule applies.
check_file() {
	local file=$1 folder=$2 line inc target m
	while IFS=: read -r line inc; do
		inc=${inc#*\"}; inc=${inc%%\"*}
		case "$inc" in
		rr/*.h)
			m=$(basename "$inc" .h)
			target=${home[$m]:-}
			if [[ ! -e "include/$inc" ]]; then
				complain "$file:$line: includes $inc, which is not a public header"
				continue
			fi
			;;
		*/*) complain "$file:$line: includes \"$inc\": use \"rr/NAME.h\" or a header of the same folder"; continue ;;
		*)
			target=$folder
			if [[ ! -e "$(dirname "$file")/$inc" ]]; then
				complain "$file:$line: includes \"$inc\", which is not beside it (headers of other folders are public: \"rr/$inc\")"
			fi
			continue
			;;
		esac
		[[ -z "$target" || "$target" == "$folder" ]] && continue
		case " ${below[$folder]} " in
		*" $target "*) ;;
		*) complain "$file:$line: includes $inc of $target, which is not below $folder (it may use: ${below[$folder]:-nothing of ours})" ;;
		esac
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
}

for folder in "${!below[@]}"; do
	for f in "$folder"/*.c "$folder"/*.h; do
		[[ -e "$f" ]] && check_file "$f" "$folder"
	done
done
for h in include/rr/*.h; do
	m=$(basename "$h" .h)
	[[ -n "${home[$m]:-}" ]] && check_file "$h" "${home[$m]}"
done

if [[ $bad != 0 ]]; then
	echo "check-layers: includes must point down; each folder's lower layers are in the table at the top of scripts/check-layers.sh (README, \"Layout\")" >&2
	exit 1
fi
echo "check-layers: ok (${#below[@]} layers)"
