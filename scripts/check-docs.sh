#!/usr/bin/env bash
# Checks the README's shape (issue 31) and that every relative link in README.md and docs/
# names a file that exists. Run from anywhere; exits 1 naming what is wrong.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bad=0
lines=$(wc -l <README.md)
((lines <= 400)) || { echo "README.md has $lines lines (at most 400)"; bad=1; }
first=$(grep -nE '^electop --(etcd|sql|zk|redis) ' README.md | head -1 | cut -d: -f1)
[[ -n $first && $first -le 80 ]] || { echo "README.md: no command pointing at a store within the first 80 lines"; bad=1; }
while IFS= read -r page; do
  dir=$(dirname "$page")
  # Links outside fenced blocks: ](target) with no scheme; the #anchor is dropped.
  while IFS= read -r target; do
    path=${target%%#*}
    [[ -z $path || $path == http://* || $path == https://* ]] && continue
    [[ -e $dir/$path ]] || { echo "$page: broken link $target"; bad=1; }
  done < <(awk '/^```/ { fence = !fence; next } !fence' "$page" | grep -oE '\]\([^) ]+\)' | sed -E 's/^\]\((.*)\)$/\1/')
done < <(printf '%s\n' README.md; find docs -name '*.md' | sort)
((bad == 0)) && echo "docs: README.md $lines lines, first store command at line $first, links fine"
exit "$bad"
