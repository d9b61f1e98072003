#!/bin/sh
# header_map_check.sh - shmalloc.h's map against the header; `make map-check`.
#
#   tests/checks/header_map_check.sh [HEADER]     (default: shmalloc.h)
#
# A banner is a line that starts "/* >> name".  Each name is a banner once,
# and the top comment's CONTENTS lists every banner ("     >> name"), no
# other, in the file's order.  Prints what differs; fails if anything does.
cd "$(dirname "$0")/../.." || exit 1
h=${1:-shmalloc.h}
[ -r "$h" ] || { echo "$h: cannot read it"; exit 1; }
# The name after ">> ": up to two spaces, a quote or the first character
# that is not a lower-case letter, a digit, a space or a colon.
name='{ s = substr($0, index($0, ">> ") + 3); sub(/  .*/, "", s); sub(/".*/, "", s)
        if (match(s, /^[a-z0-9][a-z0-9 :]*[a-z0-9]/)) print substr(s, 1, RLENGTH) }'
banners=$(awk "/^\\/\\* >> / $name" "$h")
[ -n "$banners" ] || { echo "$h: no \">> name\" banner at all"; exit 1; }
contents=$(awk "/^   CONTENTS/ { c = 1 } c && /\\*\\// { exit } c && /^ *>> / $name" "$h")
bad=0
for b in $(printf '%s\n' "$banners" | sort | uniq -d | tr ' ' '~'); do
    echo "$h: \">> $(echo "$b" | tr '~' ' ')\" is a banner more than once"; bad=1
done
printf '%s\n' "$banners" | sort -u | while IFS= read -r b; do
    printf '%s\n' "$contents" | grep -qxF "$b" || echo "$h: banner \">> $b\" is not in CONTENTS"
done | grep . && bad=1
printf '%s\n' "$contents" | grep . | while IFS= read -r c; do
    printf '%s\n' "$banners" | grep -qxF "$c" || echo "$h: CONTENTS lists \">> $c\", which is no banner"
done | grep . && bad=1
if [ "$bad" = 0 ] && [ "$banners" != "$contents" ]; then
    echo "$h: CONTENTS lists the banners in another order than the file has them:"
    printf '%s\n' "$banners" | sed 's/^/    /'
    bad=1
fi
[ "$bad" = 0 ] && echo "map-check: $(printf '%s\n' "$banners" | wc -l) banners, each once, CONTENTS in file order"
exit $bad
