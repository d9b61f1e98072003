#!/usr/bin/env bash
# docs_check.sh - runs the documentation as written; `make docs-check`.
#
#   tests/checks/docs_check.sh [DOC...]     (default: every document below)
#
# The documents: README.md, integrations/*/README.md and the EXAMPLES of
# every man page in man/.  Their blocks, by kind:
#   ```sh (shell, bash) and indented Markdown blocks, and a man page's .EX
#       blocks that are not code: commands, run one by one, in order, as
#       one shell per document would (a cd or a variable holds for what
#       follows);
#   ```console: `$ ` lines are commands, the lines after each its whole
#       output (compared; in any order, since PEs print concurrently; `...`
#       stands for any text, and a line of `...` alone for any further lines);
#   ```c, and a man page's .EX block that starts with a comment naming a
#       file: written to that file (`/* prog.c - ...`), which a command of
#       the same document must build, and which must compile with
#       -Wall -Wextra -Werror whatever flags that command shows;
#   ```cmake, and a man page's .EX block starting cmake_minimum_required:
#       written to CMakeLists.txt, which a cmake command must use;
#   ```text: shown, not run (messages quoted from the code, which the
#       code's own tests check).
# Any other kind fails, so a new block gets a decision.  A command runs
# with its status checked, under a timeout; one that cannot run here must
# match an entry of SKIP below, which says why, and an entry that matches
# nothing fails too.  A document in GATE runs only when its variable is 1
# (the target that installs what it needs sets it); otherwise each of its
# commands is listed as not run, with the reason.
#
# Where they run: a README in a copy of this tree (as a reader's checkout;
# make's B is exported, so make reuses the built artefacts), a man page in
# an empty directory, with the PKG_CONFIG_PATH and PATH of an installation (the
# pages speak of an installed shmalloc).  /opt/shmalloc, the documents'
# install prefix, is a temporary directory; the environment has no
# LD_LIBRARY_PATH or MANPATH, and FI_PROVIDER and mpirun's settings come
# from make (MPIRUN_ENV).  As root, an mpirun command without
# --allow-run-as-root runs as nobody, and one with it without the
# environment's permission (see mpirun_form).
#
# Then two comparisons with the header: the variables of the README's
# tables and of the man pages' ENVIRONMENT sections against the options
# table (shmalloc_options()), and man 7's TRANSPORT CONTRACT against
# struct shmalloc_transport and the comment above it; and the README's
# first two commands, make demo and make test (a reader's set-up, and CI's).
#
# Each step prints PASS or FAIL, a skipped command SKIP; the last line
# counts the steps.  The work tree is kept on failure.
set -u
cd "$(dirname "$0")/../.." || exit 1
SRC=$(pwd)
MAKE=${MAKE:-make}
CC=${CC:-cc}
B=${B:-build}
mkdir -p "$B" && B=$(cd "$B" && pwd)
TIMEOUT=${DOCS_TIMEOUT:-120}
strict="-Wall -Wextra -Werror" # every C file a document gives compiles clean with these

# Commands not run here: a glob matched against the whole command (its
# continuation lines joined, its trailing comment left out), then why.
SKIP=(
    'make test'
    'the suite this check is part of'
    'apt-get build-dep ./'
    'installs packages: make test-deb runs it as written (as root) in its copy of the tree'
    'dpkg-buildpackage -us -uc -b'
    'make test-deb runs it as written in its copy of the tree (about half a minute; .ci/run runs it after make test)'
    '*srun --mpi=pmix *'
    'needs a Slurm cluster; make test-slurm runs the transport under srun on one it starts'
    'apt-get install *'
    'installs packages; make test gets its own through scripts/deps.sh'
)
# Documents whose commands need what make test does not install, each with
# the variable that the target that installs it sets to run them; without
# it, every command of the document is listed as not run, with the reason.
declare -A GATE=([integrations/openmpi/README.md]=DOCS_OPENMPI)
declare -A GATE_REASON=([integrations/openmpi/README.md]="needs Open MPI's development files and oshmem: make test-openmpi (scripts/deps.sh openmpi, in CI) runs this document")

work=$(mktemp -d "${TMPDIR:-/tmp}/shmalloc-docs-check.XXXXXX") || exit 1
prefix=$work/prefix
log=$work/log

. tests/checks/steps.sh   # counted in a file: each document runs in a subshell of its own

# ---- reading the documents ------------------------------------------------
# Each block as records on stdout: "@@ KIND LINE", then its lines.

markdown_blocks() {
    awk '
    function flush() {
        while (n && body[n] ~ /^[ \t]*$/) n--
        if (n) { print "@@ " kind " " start; for (i = 1; i <= n; i++) print body[i] }
        n = 0
    }
    function flush_indented() { if (indented) { indented = 0; flush() } }
    # A fence, also one indented inside a list item: its lines lose that indent.
    fence {
        if ($0 ~ /^[ \t]*```[ \t]*$/) { fence = 0; flush(); next }
        line = $0; for (k = 0; k < indent && substr(line, 1, 1) == " "; k++) line = substr(line, 2)
        body[++n] = line; next
    }
    /^[ ]*```/ {
        flush_indented()
        match($0, /^ */); indent = RLENGTH
        kind = substr($0, indent + 4); sub(/[ \t].*/, "", kind); if (kind == "") kind = "none"
        fence = 1; start = NR + 1; n = 0; next
    }
    indented && (/^    / || /^\t/ || /^[ \t]*$/) { line = $0; sub(/^(    |\t)/, "", line); body[++n] = line; next }
    indented { flush_indented() }
    (/^    / || /^\t/) && prev_blank {
        # Inside a list an indented block is code only past the item text
        # (CommonMark); this check does not follow that: it asks for a fence.
        indented = 1; kind = in_list ? "in-list" : "indented"; start = NR; n = 0
        if (in_list && $0 !~ /^      /) { indented = 0; kind = "" }
        else { line = $0; sub(/^(    |\t)/, "", line); body[++n] = line; next }
    }
    {
        if ($0 ~ /^[ \t]*([-*+]|[0-9]+\.)[ \t]/) in_list = 1
        else if ($0 ~ /^[^ \t]/) in_list = 0
        prev_blank = $0 ~ /^[ \t]*$/
    }
    BEGIN { prev_blank = 1 }
    END { flush_indented(); if (fence) { kind = "unclosed"; flush() } }
    ' "$1"
}

# A man page's EXAMPLES: its .EX blocks, with roff's escapes undone (an
# escape not listed here is marked, and fails).
man_blocks() {
    awk '
    /^\.SH/ { examples = ($0 ~ /^\.SH "?EXAMPLES?"?[ \t]*$/); next }
    !examples { next }
    /^\.EX/ { ex = 1; start = NR + 1; n = 0; next }
    /^\.EE/ && ex {
        ex = 0
        kind = "sh"
        if (body[1] ~ /^\/\* [A-Za-z0-9_.-]+\.(c|h|cpp) /) kind = "c"
        else if (body[1] ~ /^cmake_minimum_required/) kind = "cmake"
        else for (i = 1; i <= n; i++) if (body[i] ~ /^#include/) kind = "c"
        print "@@ " kind " " start
        for (i = 1; i <= n; i++) print body[i]
        next
    }
    ex && /^\.\\"/ { next }
    ex {
        line = $0
        gsub(/\\\(dq/, "\"", line); gsub(/\\\(aq/, "\047", line); gsub(/\\\(ga/, "`", line)
        gsub(/\\\(ti/, "~", line); gsub(/\\\(ha/, "^", line)
        gsub(/\\\(rs/, "\001", line); gsub(/\\e/, "\001", line); gsub(/\\\\/, "\001", line)
        gsub(/\\-/, "-", line); gsub(/\\&/, "", line); gsub(/\\~/, " ", line)
        if (line ~ /\\/ || $0 ~ /^\./) line = "@@UNKNOWN-ROFF@@ " $0
        gsub(/\001/, "\\", line)
        body[++n] = line
    }
    ' "$1"
}

# The file a C block names on its first line: /* NAME.c - ... */
c_block_name() { sed -n '1s,^/\* \([A-Za-z0-9_.-]*\.\(c\|h\|cpp\)\)[ :].*,\1,p' "$1"; }

# ---- running one document -------------------------------------------------
skip_reason() {
    local cmd=$1 i
    for ((i = 0; i < ${#SKIP[@]}; i += 2)); do
        # shellcheck disable=SC2053
        if [[ $cmd == ${SKIP[i]} ]]; then echo "$i" >>"$work/skips-used"; echo "${SKIP[i + 1]}"; return 0; fi
    done
    return 1
}

# Output as the document shows it (expected, with ... wildcards) against
# what the command printed, line for line in any order.
output_matches() {
    awk -v expected="$1" '
    function pattern(s,   out, i, c) {
        out = ""
        while ((i = index(s, "...")) > 0) { out = out quote(substr(s, 1, i - 1)) ".*"; s = substr(s, i + 3) }
        return "^" out quote(s) "$"
    }
    function quote(s,   out, i, c) {
        out = ""
        for (i = 1; i <= length(s); i++) {
            c = substr(s, i, 1)
            out = out (index("\\^$.[]|()*+?{}/", c) ? "\\" c : c)
        }
        return out
    }
    BEGIN {
        while ((getline line < expected) > 0) {
            if (line == "...") any = 1; else want[++n] = pattern(line)
        }
    }
    { got[++m] = $0 }
    END {
        for (i = 1; i <= n; i++) {
            for (j = 1; j <= m; j++) if (!used[j] && got[j] ~ want[i]) { used[j] = 1; break }
            if (j > m) { print "no line of the output matches: " want[i]; bad = 1 }
        }
        if (!any) for (j = 1; j <= m; j++) if (!used[j]) { print "a line the document does not show: " got[j]; bad = 1 }
        exit bad
    }' "$2"
}

# mpirun refuses root unless told it may: a document shows the user's
# form, and beside it the root form with --allow-run-as-root.  When this
# check runs as root, the user's form runs as a normal user (nobody), and
# the root form without the permission make's MPIRUN_ENV gives, so each
# is run as written by whom it is for.  "" (as is), "user" or "root".
mpirun_form() {
    [[ $1 == *mpirun\ * ]] || return 0
    if [[ $1 == *--allow-run-as-root* ]]; then echo root
    elif [ "$(id -u)" = 0 ]; then echo user; fi
}

# Runs one command as the shell of its document would, in a child under a
# timeout; what it leaves (its directory, and its variables: set -a exports
# them) holds for the next commands, as in a reader's shell.  One run as a
# normal user leaves nothing: it has no way to write here.
run_command() {
    local cmd=$1 state=$work/state status
    [[ $cmd =~ ^unset[[:space:]] ]] && { eval "$cmd"; return; }
    case $(mpirun_form "$cmd") in
    user)
        timeout -k 10 "$TIMEOUT" runuser -u nobody -- env HOME="$work/user" bash -c 'eval "$1"' docs "$cmd" </dev/null
        return ;;
    root) cmd="unset OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM; $cmd" ;;
    esac
    rm -f "$state" "$state.pwd"
    timeout -k 10 "$TIMEOUT" bash -c 'set -a; eval "$1"; status=$?; export -p >"$2"; pwd >"$2.pwd"; exit $status' \
        docs "$cmd" "$state" </dev/null && status=0 || status=$?
    if [ -f "$state.pwd" ]; then
        # shellcheck disable=SC1090
        source <(grep -vE '^declare -x (PWD|OLDPWD|SHLVL|_|SHELLOPTS|BASHOPTS)(=|$)' "$state" | sed 's/^declare -x /declare -gx /')
        cd "$(cat "$state.pwd")" || status=1
    fi
    return $status
}

# One document: its blocks in order, in its directory (in a subshell: the
# document's cd and export hold for it alone).
run_document() {
    local doc=$1 dir=$2 blocks=$work/blocks.$RANDOM kind line name cmd
    local -a written=()
    ran=()
    local gate=${GATE[$doc]:-}
    gated=
    if [ -n "$gate" ] && [ "${!gate:-}" != 1 ]; then gated=${GATE_REASON[$doc]}; fi
    cd "$dir" || return
    case $doc in
    man/*) man_blocks "$SRC/$doc" ;;
    *) markdown_blocks "$SRC/$doc" ;;
    esac | sed "s|/opt/shmalloc|$prefix|g" >"$blocks"
    mkdir -p "$blocks.d"
    # Split into files: NNN KIND LINE.
    awk -v d="$blocks.d" '/^@@ / { f = sprintf("%s/%03d %s %s", d, ++k, $2, $3); printf "" > f; next } { print >> f }' "$blocks"
    for f in "$blocks.d"/*; do
        [ -e "$f" ] || continue
        read -r _ kind line <<<"$(basename "$f")"
        where="$doc:$line"
        if grep -q '^@@UNKNOWN-ROFF@@' "$f"; then
            : >"$log"; grep '^@@UNKNOWN-ROFF@@' "$f" >"$log"
            fail "$where: a roff escape this check does not know"
            continue
        fi
        case $kind in
        c)
            name=$(c_block_name "$f")
            if [ -z "$name" ]; then
                echo "a C block starts with a comment naming its file: /* prog.c - ... */" >"$log"
                fail "$where: C block without a file name"; continue
            fi
            if [ -e "$dir/$name" ]; then
                echo "$dir/$name exists already (the tree's, or an earlier block's)" >"$log"
                fail "$where: $name written twice"; continue
            fi
            cp "$f" "$dir/$name"; written+=("$name")
            ;;
        cmake)
            if [ -e "$dir/CMakeLists.txt" ]; then
                echo "one CMakeLists.txt per document" >"$log"; fail "$where: CMakeLists.txt written twice"; continue
            fi
            cp "$f" "$dir/CMakeLists.txt"; written+=(CMakeLists.txt)
            ;;
        text) ;;
        sh | shell | bash | indented | console)
            run_block "$kind" "$f" "$where" ;;
        in-list)
            echo "an indented block inside a list item: make it a fenced block (\`\`\`sh, \`\`\`text, ...)" >"$log"
            fail "$where: a code block this check cannot classify" ;;
        *)
            echo "a block is sh, console, c, cmake or text (see tests/checks/docs_check.sh)" >"$log"
            fail "$where: a block of kind '$kind'" ;;
        esac
    done
    # Every file the document gives is used by one of its commands (that ran).
    [ -z "$gated" ] || written=()
    for name in "${written[@]}"; do
        : >"$log"
        local used=
        for cmd in "${ran[@]}"; do
            case $name in
            CMakeLists.txt) [[ $cmd == cmake* ]] && used=1 ;;
            *) [[ " $cmd " == *[\ /]"$name"[\ \;]* ]] && used=1 ;;
            esac
        done
        if [ -n "$used" ]; then pass "$doc: $name is built by its commands"
        else echo "no command of $doc that ran uses $name" >"$log"; fail "$doc: $name is used by no command"; fi
        # Whatever flags its command shows, a reader may add these.
        # shellcheck disable=SC2046,SC2086
        [[ $name == *.c ]] && step "$doc: $name compiles with -Wall -Wextra -Werror" $CC -std=c99 $strict \
            -I"$dir" -I"$prefix/include/shmalloc" $(pkg-config --cflags pmix libfabric 2>/dev/null) \
            -fsyntax-only "$dir/$name"
    done
    # A document that starts PEs with mpirun shows the root's form too.
    local user=0 root=0
    for cmd in "${ran[@]}"; do
        [[ $cmd == *mpirun\ * ]] || continue
        if [[ $cmd == *--allow-run-as-root* ]]; then root=1; else user=1; fi
    done
    if [ $root = 1 ]; then pass "$doc: shows mpirun's form for root (--allow-run-as-root)"
    elif [ $user = 1 ]; then
        echo "mpirun refuses root without --allow-run-as-root: show that form beside the user's" >"$log"
        fail "$doc: no form of its mpirun commands for root"
    fi
    rm -rf "$blocks" "$blocks.d"
}

# A block of commands (and, for console, their output).  Lines ending in a
# backslash continue; blank lines and comments are the shell's.
run_block() {
    local kind=$1 file=$2 where=$3 cmd= expected=$work/expected line pending=
    : >"$expected"
    while IFS= read -r line || [ -n "$line" ]; do
        if [ "$kind" = console ]; then
            if [[ $line == '$ '* ]]; then
                [ -n "$pending" ] && finish_command "$pending" "$where" "$expected"
                : >"$expected"; pending=${line#\$ }
                while [[ $pending == *\\ ]] && IFS= read -r line; do pending+=$'\n'"$line"; done
            elif [ -n "$pending" ]; then
                printf '%s\n' "$line" >>"$expected"
            fi
            continue
        fi
        cmd+=$line
        if [[ $cmd == *\\ ]]; then cmd+=$'\n'; continue; fi
        [[ $cmd =~ ^[[:space:]]*(#.*)?$ ]] || finish_command "$cmd" "$where" ""
        cmd=
    done <"$file"
    [ -n "$pending" ] && finish_command "$pending" "$where" "$expected"
    return 0
}

finish_command() {
    local cmd=$1 where=$2 expected=$3 shown reason status form
    # One line, without its continuations and its trailing comment.
    shown=$(printf '%s' "$cmd" | sed 's/\\$//' | tr '\n' ' ' | tr -s ' ' | sed -e "s/[[:space:]]*#[^\"']*\$//")
    if reason=$(skip_reason "$shown") || { [ -n "$gated" ] && reason=$gated; }; then
        shown=${shown//$prefix//opt/shmalloc}
        echo "SKIP: $where: $shown ($reason)"; return
    fi
    shown=${shown//$prefix//opt/shmalloc}
    run_command "$cmd" >"$log" 2>&1 && status=0 || status=$?
    ran+=("$cmd")
    form=$(mpirun_form "$cmd")
    shown+=${form:+ (as ${form/user/nobody})}
    if [ "$status" != 0 ]; then
        echo "exit status $status" >>"$log"; fail "$where: $shown"; return
    fi
    # A console block shows all the output: none shown, none printed.
    if [ -n "$expected" ]; then
        cp "$log" "$work/out"
        if ! output_matches "$expected" "$work/out" >"$log" 2>&1; then
            { echo "its output:"; cat "$work/out"; } >>"$log"; fail "$where: $shown (output)"; return
        fi
    fi
    pass "$where: $shown"
}

# ---- the documents' variables against the options table --------------------
# Variables the documents may name that the table does not hold: libfabric's
# own, and one read only by the transport's test build.
NON_TABLE="FI_PROVIDER FI_TCP_IFACE SHMALLOC_TEST_NODE_SIZE"

# Every row of the table: the heap's, and those each transport adds (the
# PMIx transport's when its library is built).
option_names() {
    local libs="$B/libshmalloc_pthreads.a" pmix=0
    if [ -f "$B/libshmalloc_pmix_ofi.a" ]; then
        pmix=1 libs="$B/libshmalloc_pmix_ofi.a $libs $(pkg-config --libs pmix libfabric)"
    fi
    printf '%s\n' '#include "shmalloc.h"' '#include "transports/shmalloc_pthreads.h"' '#include <stdio.h>' \
        'int shmalloc_pmix_ofi_options(void);' 'int main(void) {' \
        '    const shmalloc_option *o = shmalloc_options();' \
        "    if (shmalloc_pthreads_options() != 0 || ($pmix && shmalloc_pmix_ofi_options() != 0)) return 1;" \
        '    for (int i = 0; i < shmalloc_option_count(); i++) {' \
        '        printf("%s\n", o[i].name);' \
        '        for (int k = 0; k < 2; k++) if (o[i].alias[k]) printf("%s\n", o[i].alias[k]);' \
        '    }' '    return 0; }' >"$work/options.c"
    $CC -std=c99 -I"$SRC" "$work/options.c" $libs "$B/libshmalloc.a" -pthread -o "$work/options" &&
        "$work/options" | sort -u
}

# The first column of the READMEs' tables headed "variable".
readme_variables() {
    awk '/^\|/ { if (!table) table = ($0 ~ /^\|[ \t]*variable[ \t]*\|/) + 1
                 if (table == 2) { split($0, cell, "|"); print cell[2] } next }
         { table = 0 }' "$@" | grep -o '`[A-Z][A-Z0-9_]*`' | tr -d '`' | sort -u
}

# The bold names of the man pages' ENVIRONMENT sections that look like
# variables (SHMALLOC_*, SHMEM_*, SMA_*, FI_*), less the headers' macros
# (SHMEM_MALLOC_FAIL, SHMALLOC_MAX_LOG2, ...).
man_variables() {
    awk '/^\.SH/ { env = ($0 ~ /^\.SH "?ENVIRONMENT"?[ \t]*$/); next }
         env && /^\.(B|BR|RB|BI|IB) / { print }
         env { while (match($0, /\\fB[A-Z0-9_]+\\f[PR]/)) { print substr($0, RSTART, RLENGTH); $0 = substr($0, RSTART + RLENGTH) } }' "$@" |
        grep -oE '(^|[^A-Za-z0-9_])(SHMALLOC|SHMEM|SMA|FI)_[A-Z0-9_]+' | grep -oE '[A-Z][A-Z0-9_]+$' | sort -u |
        while read -r name; do
            grep -qE "^[[:space:]]*#[[:space:]]*define[[:space:]]+$name\\b" "$SRC/shmalloc.h" "$SRC"/transports/*.h ||
                echo "$name"
        done
}

check_variables() {
    local table readme man7 listed name bad=0
    table=$(option_names) || { echo "cannot list the options table"; return 1; }
    readme=$(readme_variables "$SRC/README.md" "$SRC"/integrations/*/README.md)
    man7=$(man_variables "$SRC/man/shmalloc.7")
    listed=$(printf '%s\n' "$readme" $(man_variables $(find "$SRC/man" -type f -name '*.[1-9]')) | sort -u)
    echo "options table: $(echo $table)"
    for name in $table; do
        grep -qx "$name" <<<"$readme" || { echo "$name (options table) is in no variable table of the READMEs"; bad=1; }
        grep -qx "$name" <<<"$man7" || { echo "$name (options table) is not in man 7 shmalloc's ENVIRONMENT"; bad=1; }
    done
    for name in $listed; do
        grep -qx "$name" <<<"$table" || [[ " $NON_TABLE " == *" $name "* ]] ||
            { echo "$name (documented) is neither in the options table nor in docs_check.sh's NON_TABLE"; bad=1; }
    done
    return $bad
}

# ---- man 7's transport contract against the header ------------------------
# The members of struct shmalloc_transport, in order.
header_members() {
    awk '/^typedef struct shmalloc_transport \{/ { s = 1; next } /^\} shmalloc_transport;/ { s = 0 }
         s { sub(/\/\*.*/, ""); if (match($0, /\(\*[a-z_]+\)/)) print substr($0, RSTART + 2, RLENGTH - 3)
             else if (match($0, /[a-z_]+;/)) print substr($0, RSTART, RLENGTH - 1) }' "$SRC/shmalloc.h"
}
# "member REQUIRED|optional", from the comment above the struct: an entry
# starts a line with its members' names; a member alone on a line without
# either word shares the entry above it (register_region, deregister_region).
header_status() {
    local members=" $(header_members | tr '\n' ' ') "
    awk -v members="$members" '/^\/\* >> transport -/ { c = 1 } c && /\*\// { c = 0 }
        c && match($0, /^   [a-z_]+(, [a-z_]+)*  /) {
            tag = substr($0, 4, RLENGTH - 5); n = split(tag, names, /, /)
            if (index(members, " " names[1] " ") == 0) next
            rest = substr($0, RLENGTH + 1)
            if (match(rest, /^ *(REQUIRED|optional)/)) { status = rest; sub(/^ */, "", status); sub(/[^A-Za-z].*/, "", status) }
            for (i = 1; i <= n; i++) print names[i], tolower(status)
        }' "$SRC/shmalloc.h"
}
# The same from man 7: each .TP entry of TRANSPORT CONTRACT names members
# in italics, and its text starts with Required or Optional.
man_status() {
    awk '/^\.SH/ { s = ($0 ~ /^\.SH "?TRANSPORT CONTRACT"?/); next } !s { next }
        /^\.TP/ { tag = 1; next }
        tag == 1 { names = $0; sub(/^\.IR? /, "", names); gsub(/"[^"]*"/, " ", names); tag = 2; next }
        tag == 2 { status = $1; sub(/[^A-Za-z].*/, "", status); n = split(names, m, " ")
                   for (i = 1; i <= n; i++) print m[i], tolower(status); tag = 0 }' "$SRC/man/shmalloc.7"
}
# The struct as man 7 lists it: its members, in order.
man_struct_members() {
    awk '/^\.SH/ { s = ($0 ~ /^\.SH "?TRANSPORT CONTRACT"?/); next } !s { next }
        /^typedef struct shmalloc_transport/ { e = 1; next } /^\} shmalloc_transport;/ { e = 0 }
        e { sub(/\/\*.*/, ""); if (match($0, /\(\*[a-z_]+\)/)) print substr($0, RSTART + 2, RLENGTH - 3)
            else if (match($0, /[a-z_]+;/)) print substr($0, RSTART, RLENGTH - 1) }' "$SRC/man/shmalloc.7"
}

check_contract() {
    local header man bad=0
    header=$(header_status | sort)
    man=$(man_status | sort)
    echo "header: $(echo $header)"; echo "man 7:  $(echo $man)"
    # user is the pointer every member is given, not an entry of either list.
    [ "$(header_members | grep -vx user)" != "" ] || { echo "no members found in shmalloc.h"; bad=1; }
    for m in $(header_members | grep -vx user); do
        grep -q "^$m " <<<"$header" || { echo "$m: the header's comment gives it no REQUIRED or optional"; bad=1; }
    done
    [ "$header" = "$man" ] || { echo "man 7 and the header differ:"; diff <(echo "$header") <(echo "$man"); bad=1; }
    [ "$(header_members)" = "$(man_struct_members)" ] ||
        { echo "man 7's listing of the struct differs from the header's:"; diff <(header_members) <(man_struct_members); bad=1; }
    return $bad
}

# ---- start.h's steps against the README's and the fork transport's ---------
# The calls transports/common/start.h's comment lists as a transport's
# start-up, in order: "NAME required", or "NAME optional" for a line that
# says "only".
start_steps() {
    awk '/start-up, in order/ { s = 1; next }
         s && /^[ \t]*$/ && n { exit }
         s && match($0, /(shmalloc_start_[a-z]+|shmalloc_options_add)\(/) {
             n++; print substr($0, RSTART, RLENGTH - 1), ($0 ~ / only /) ? "optional" : "required" }' \
        "$SRC/transports/common/start.h"
}
# Each step's first mention in a file, in the file's order.
steps_in() { grep -oE 'shmalloc_start_[a-z]+|shmalloc_options_add' "$1" | awk '!seen[$0]++'; }

check_start_steps() {
    local steps readme=$work/my_transport.c listed bad=0 name status
    steps=$(start_steps)
    echo "start.h: $(echo $steps)"
    [ -n "$steps" ] || { echo "no steps found in start.h's comment"; return 1; }
    awk '/^\/\* my_transport\.c/ { c = 1 } c && /^```/ { exit } c' "$SRC/README.md" >"$readme"
    [ -s "$readme" ] || { echo "no my_transport.c in README.md"; return 1; }
    while read -r name status; do
        for f in "$readme" "$SRC/tests/fork/transport_fork/fork.c"; do
            [ "$status" = optional ] || grep -q "$name(" "$f" ||
                { echo "$name: a required step of start.h that $(basename "$f") does not take"; bad=1; }
        done
    done <<<"$steps"
    listed=$(awk '{ print $1 }' <<<"$steps")
    # The README's steps, in its order, are start.h's in start.h's order.
    [ "$(steps_in "$readme" | grep -xF "$listed")" = "$(grep -xF "$(steps_in "$readme")" <<<"$listed")" ] ||
        { echo "README.md takes the steps in another order:"; steps_in "$readme"; bad=1; }
    return $bad
}

# ---- the README's first commands ------------------------------------------
# A reader's set-up, and CI's: the first two commands README.md shows.
first_commands() {
    markdown_blocks "$SRC/README.md" | awk '/^@@ / { c = $2 ~ /^(indented|sh|shell|bash)$/ ? 1 : $2 == "console" ? 2 : 0; next }
        c == 2 && !/^\$ / { next }
        c && !/^[ \t]*(#.*)?$/ { sub(/^\$ /, ""); sub(/[ \t]*#.*/, ""); print; if (++n == 2) exit }'
}
check_first_commands() { first_commands; [ "$(first_commands)" = $'make demo\nmake test' ]; }

# ---- main -----------------------------------------------------------------
if [ $# -gt 0 ]; then docs=("$@"); else
    docs=(README.md integrations/*/README.md)
    for f in man/*.[1-9]; do [ -L "$f" ] || docs+=("$f"); done
fi
# A reader's shell: none of make's settings, nothing that finds libraries,
# a home of its own.
unset LD_LIBRARY_PATH MANPATH PKG_CONFIG_PATH CMAKE_PREFIX_PATH MAKEFLAGS MFLAGS MAKELEVEL
export B HOME=$work/home
mkdir -p "$HOME" "$work/user"
# Commands run as nobody reach the documents' directories; $work/user is
# its home.
chmod 755 "$work" && chown nobody "$work/user" 2>/dev/null

step "the README's and man pages' variables are the options table's (or listed in docs_check.sh)" check_variables
step "transports/common/start.h's steps are those README.md's my_transport.c and the fork transport take" \
    check_start_steps
step "README.md's first two commands are make demo and make test" check_first_commands
step "man 7's TRANSPORT CONTRACT lists the header's members, REQUIRED and optional as the header says" check_contract

step "make install PREFIX=<tmp> (the installation the documents speak of, as /opt/shmalloc)" \
    "$MAKE" --no-print-directory -C "$SRC" install PREFIX="$prefix"
for doc in "${docs[@]}"; do
    dir=$work/run/$(echo "$doc" | tr / _)
    mkdir -p "$dir"
    case $doc in
    man/*)
        (export PKG_CONFIG_PATH=$prefix/lib/pkgconfig PATH=$prefix/bin:$PATH; run_document "$doc" "$dir") ;;
    *)
        tar -C "$SRC" --exclude=./build --exclude=./.git -cf - . | tar -C "$dir" -xf -
        # make's recipes run ./$(B)/...: B relative to the copy.
        (B=$(realpath --relative-to="$dir" "$B"); run_document "$doc" "$dir") ;;
    esac
done
if [ $# = 0 ]; then
    for ((i = 0; i < ${#SKIP[@]}; i += 2)); do
        grep -qx "$i" "$work/skips-used" 2>/dev/null ||
            { : >"$log"; fail "SKIP entry '${SKIP[i]}' matches no command of the documents: remove it"; }
    done
fi

skipped=$(grep -c . "$work/skips-used" 2>/dev/null || echo 0)
if steps_total docs-check "($skipped command$([ "$skipped" = 1 ] || echo s) not run, see SKIP)"; then
    rm -rf "$work"
    exit 0
fi
echo "docs-check: the work tree is kept in $work" >&2
exit 1
