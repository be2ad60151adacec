# shellcheck shell=bash
# What the bench scripts share, sourced by them: medians and formatting of measurements.
# stats: reads numbers, prints "median min max".
stats() { sort -n | awk '{a[NR]=$1} END {m = NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; print m, a[1], a[NR]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
gbps() { awk -v b="$1" -v ms="$2" 'BEGIN { printf "%.2f", b / ms / 1e6 }'; }
mbps() { awk -v b="$1" -v ms="$2" 'BEGIN { printf "%.0f MB/s", b / ms / 1e3 }'; }
# ms_since T0: milliseconds since T0 (date +%s%N).
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
