#!/usr/bin/env bash
# Rewrites the README's screen captures in assets/ from the snapshot tests' screens, so
# the pictures are the tested screens. Run after `cargo insta accept`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# asset name <- snapshot file
pairs=(
  "dashboard-80x24 tests/snapshots/ui_snapshots__dashboard_at_80x24.snap"
  "alarms-160x30 tests/snapshots/ui_snapshots__each_alarm_is_marked_counted_and_sorted_first.snap"
  "filter-100x24 tests/snapshots/ui_snapshots__a_filter_narrows_the_rows_and_shows_in_the_header.snap"
  "command-bar-100x24 tests/snapshots/ui_snapshots__the_command_bar_lists_and_completes.snap"
  "events-80x24 tests/snapshots/ui_snapshots__the_events_view_lists_every_change_newest_first_and_wraps.snap"
  "context-100x24 tests/snapshots/ui_snapshots__context_wide.snap"
  "stale-80x24 tests/snapshots/ui_snapshots__a_stale_source_is_frozen_dimmed_and_named.snap"
  "detail-lease-key tests/snapshots/ui_detail_snapshots__detail_of_a_lease_key.snap"
  "columns-200x50 tests/snapshots/ui_detail_snapshots__columns_follow_content_at_200x50.snap"
  "force-leader-picker tests/snapshots/ui_detail_snapshots__force_leader_picker.snap"
  "demo-80x24 src/demo/snapshots/electop__demo__screen_tests__killed_80x24.snap"
  "demo-200x50 src/demo/snapshots/electop__demo__screen_tests__split_brain_200x50.snap"
)

for pair in "${pairs[@]}"; do
  read -r name snap <<<"$pair"
  # The screen is what follows insta's second `---`; TestBackend writes each row quoted,
  # a plain string snapshot has it as is.
  awk 'seen >= 2 { print } /^---$/ { seen++ }' "$snap" |
    sed -e 's/^"\(.*\)"$/\1/' -e 's/[[:space:]]*$//' >"assets/$name.txt"
done
echo "wrote ${#pairs[@]} captures to assets/"
