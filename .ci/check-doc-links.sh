#!/usr/bin/env bash
# Checks that every relative link in README.md, docs/*.md, the ladder's notes (gpu/ladder/NOTES.md,
# gpu/ladder/notes/*.md) and gpu/results/README.md names an existing file and, when
# it has a #anchor, a heading of that file (GitHub's slug: lower case, punctuation dropped,
# spaces to hyphens). Prints each broken link; exit 1 if there is one.
set -uo pipefail
cd "$(dirname "$0")/.."
slugs() { grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ +//' | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'; }
bad=0 n=0
for f in README.md docs/*.md gpu/ladder/NOTES.md gpu/ladder/notes/*.md gpu/results/README.md; do
  [ -f "$f" ] || continue
  while read -r link; do
    case "$link" in http://*|https://*|mailto:*) continue ;; esac
    path=${link%%#*} anchor=""
    [[ $link == *#* ]] && anchor=${link#*#}
    target=$f
    [ -n "$path" ] && target=$(dirname "$f")/$path
    n=$((n + 1))
    if [ ! -e "$target" ]; then
      echo "broken link in $f: $link (no $target)"; bad=$((bad + 1))
    elif [ -n "$anchor" ] && ! slugs "$target" | grep -qxF "$anchor"; then
      echo "broken anchor in $f: $link"; bad=$((bad + 1))
    fi
  done < <(grep -oE '\]\([^) ]+\)' "$f" | sed -E 's/^\]\(//; s/\)$//')
done
echo "check-doc-links: $n relative links, $bad broken"
[ "$bad" -eq 0 ]
