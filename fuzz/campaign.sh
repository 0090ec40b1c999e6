#!/usr/bin/env bash
# The long campaign of one target under the sanitized build (fuzz/build_sanitized.sh), at low
# priority, until it has run RUNS inputs or DEADLINE (a `date` string) has passed. libFuzzer
# stops at a finding; the campaign writes the input to the log folder, records it and starts
# again on the same corpus, so a finding costs one restart, not the campaign.
#
#   fuzz/campaign.sh TARGET RUNS DEADLINE [libFuzzer options...]
#   e.g. fuzz/campaign.sh jsonl 1000000 '10:50 today' -max_len=4096
#
# Logs, crash inputs and a one-line summary per run go to NEARDUP_CAMPAIGN_DIR
# (default fuzz/campaign, not in git): TARGET.log, TARGET-crash-*, TARGET.runs.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
name="$1"; runs="$2"; deadline="$(date -d "$3" +%s)"; shift 3
dir="${NEARDUP_CAMPAIGN_DIR:-$ROOT/fuzz/campaign}"
mkdir -p "$dir"
log="$dir/$name.log"
total=0
while [ "$total" -lt "$runs" ] && [ "$(date +%s)" -lt "$deadline" ]; do
  left=$((runs - total)); secs=$((deadline - $(date +%s)))
  start_line=$(wc -l < "$log" 2>/dev/null || echo 0)
  nice -n 19 "$ROOT/fuzz/build_sanitized.sh" fuzz "$name" -runs="$left" -max_total_time="$secs" \
    -print_final_stats=1 -artifact_prefix="$dir/$name-" "$@" >> "$log" 2>&1
  rc=$?
  # inputs of this run: the final stats, or after a finding the last status line's #N
  n=$(tail -n +"$((start_line + 1))" "$log" | sed -n 's/^stat::number_of_executed_units: *\([0-9]*\)/\1/p' | tail -1)
  if [ -z "$n" ]; then
    n=$(tail -n +"$((start_line + 1))" "$log" | sed -n 's/^#\([0-9][0-9]*\).*/\1/p' | tail -1)
  fi
  n=${n:-0}
  total=$((total + n))
  echo "$(date -u +%FT%TZ) $name exit=$rc inputs=$n total=$total" >> "$dir/$name.runs"
  if [ "$rc" -ne 0 ] && [ "$n" -eq 0 ]; then break; fi  # not a finding: the run did not start
done
echo "$(date -u +%FT%TZ) $name done total=$total" >> "$dir/$name.runs"
