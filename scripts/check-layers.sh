#!/usr/bin/env bash
# Folders are layers (docs/development.md, "Layout"): a source file may include headers of its own
# folder and of the folders below it, never one above or beside. Fails with one line per
# include that breaks the order, so the layers cannot drift back together.
set -euo pipefail
cd "$(dirname "$0")/.."

# The layer graph, from cmake/layers.txt (the one place it is written): each folder and the
# folders it may include from besides itself (its lower layers, and theirs).
declare -A folder_of direct below
while read -r name dir lower; do
	folder_of[$name]=$dir
	direct[$name]=$lower
done < <(grep -E '^[a-z]' cmake/layers.txt)
closure() { # the lower layers of $1, transitively
	local l
	for l in ${direct[$1]}; do echo "$l"; closure "$l"; done
}
for name in "${!folder_of[@]}"; do
	folders=
	for l in $(closure "$name" | sort -u); do folders+="${folder_of[$l]} "; done
	below[${folder_of[$name]}]=${folders% }
done
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
			# rr/NAME.h is in include/rr/, or made by CMake from include/rr/NAME.h.in
			if [[ ! -e "include/$inc" && ! -e "include/$inc.in" ]]; then
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

# docs/development.md's "Layout" names each layer's folder with the same lower layers ("-> a, b").
layout_doc=docs/development.md
[[ -f "$layout_doc" ]] || complain "$layout_doc: missing (it holds the Layout the layers are checked against)"
layout=$(sed -n '/^## Layout/,/^## /p' "$layout_doc" 2>/dev/null || true)
for name in "${!folder_of[@]}"; do
	want=$(echo "${direct[$name]}" | tr ' ' '\n' | sed '/^$/d' | sort | paste -sd, | sed 's/,/, /g')
	line=$(grep -E "^${folder_of[$name]}/ " <<< "$layout" || true)
	[[ -n "$line" ]] || { complain "$layout_doc, Layout: no line for ${folder_of[$name]}/"; continue; }
	got=$(sed -nE 's/.*-> ([a-z, ]+|nothing of ours)$/\1/p' <<< "$line" | tr -d ' ' | tr ',' '\n' | sed '/^$/d' | sort | paste -sd, | sed 's/,/, /g')
	[[ "$got" == "${want:-nothingofours}" ]] || complain "$layout_doc, Layout: ${folder_of[$name]}/ says '-> ${got}', cmake/layers.txt says '-> ${want:-nothing of ours}'"
done

if [[ $bad != 0 ]]; then
	echo "check-layers: includes must point down; each folder's lower layers are in cmake/layers.txt ($layout_doc, \"Layout\")" >&2
	exit 1
fi
echo "check-layers: ok (${#below[@]} layers)"
