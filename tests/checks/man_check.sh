#!/bin/sh
# man_check.sh - lints the man pages and renders each; `make man-check`.
#
#   tests/checks/man_check.sh PAGE...   the man3 pages install puts (names)
#
# The pages are staged as a man3/man7 tree, aliases as the links install
# makes, linted, and rendered with man -l from another directory, as a
# reader of an installed page would.  Without mandoc (not root, nothing
# installed) groff's warnings stand in for its lint.
set -e
cd "$(dirname "$0")/../.."
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
fail=0
mkdir -p "$stage/man1" "$stage/man3" "$stage/man7"
for p in "$@"; do
    [ -f man/$p.3 ] || { echo "FAIL man/$p.3 is missing"; fail=1; continue; }
    cp -P man/$p.3 "$stage/man3/"
done
cp man/shmalloc.7 "$stage/man7/"
cp man/shmalloc-cc.1 "$stage/man1/"
for f in man/*.1 man/*.3 man/*.7; do
    case " $* shmalloc.7 shmalloc-cc.1 " in
    *" $(basename $f .3) "*|*" $(basename $f) "*) ;;
    *) echo "FAIL $f is not in mk/install.mk's lists, so install would leave it out"; fail=1;;
    esac
done
for f in "$stage"/man1/*.1 "$stage"/man3/*.3 "$stage"/man7/*.7; do
    page=${f#$stage/}
    if command -v mandoc >/dev/null 2>&1; then
        out=$(cd "$stage" && mandoc -Tlint -Wall $page 2>&1 || true)
        if [ -n "$out" ]; then echo "FAIL mandoc -Tlint $page:"; echo "$out"; fail=1; fi
    fi
    out=$(cd "$stage" && groff -man -ww -z -Tutf8 $page 2>&1 || true)
    if [ -n "$out" ]; then echo "FAIL groff -ww -z $page:"; echo "$out"; fail=1; fi
    text=$(cd / && MANWIDTH=80 MAN_KEEP_FORMATTING= man -l "$f" 2>/dev/null | col -b)
    name=$(basename $page | sed 's/\.[137]$//')
    if ! printf '%s\n' "$text" | grep -q "^NAME" || ! printf '%s\n' "$text" | grep -qw -- "$name"; then
        echo "FAIL man -l $page does not render a page naming $name"; fail=1
    else echo "ok   $page ($(printf '%s\n' "$text" | wc -l) lines)"; fi
done
command -v mandoc >/dev/null 2>&1 || echo "man-check: mandoc not found: linted with groff -ww only"
if [ $fail = 0 ]; then echo "man-check: all pages clean"; else echo "man-check: FAILED" >&2; exit 1; fi
