#!/usr/bin/env bash
# bench/run.sh - runs the benchmarks that `make bench` builds (mk/bench.mk),
# writes bench/results/*.csv and the plots, and prints the table.
#
#   bench/run.sh all | core | scaling | table | plot
#
# Each suite replaces its own rows of bench/results/summary.csv and keeps the
# others', so a later suite (bench/collective.sh) adds rows the same way:
#   source bench/run.sh  (with BENCH_LIB=1)  then  summary_put SUITE ROWS.csv
# Columns: suite,allocator,workload,pes,ns_per_op,ns_min,ns_max,p999_ns,
# instr_per_op,frag,l1d_miss_per_op,l2_miss_per_op,mispredict_per_op,
# cest_per_op -- empty where a figure does not apply.
#
# Environment: BENCH_BIN (the binaries, default build/bench), BENCH_RUNS
# (timed runs per figure, default 5), BENCH_ALLOCATORS (default: those of
# bench/allocators), BENCH_WORKLOADS, BENCH_LIVES, BENCH_HEAPS_MIB,
# BENCH_JOBS (callgrind runs at a time), RT=1 (timed runs at real-time
# priority, as root).  Benchmarks print figures; a missing allocator or
# tool is a note, never a failure.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

BIN=${BENCH_BIN:-build/bench}
OUT=bench/results
RUNS=${BENCH_RUNS:-5}
ALLOCATORS=${BENCH_ALLOCATORS:-$(awk '/^[^#]/ { print $1 }' bench/allocators)}
WORKLOADS=${BENCH_WORKLOADS:-a b c d}
LIVES=${BENCH_LIVES:-1000 10000 100000 1000000}
HEAPS_MIB=${BENCH_HEAPS_MIB:-64 256 1024 4096 16384 65536}
JOBS=${BENCH_JOBS:-$(nproc 2>/dev/null || echo 1)}
HEADER='suite,allocator,workload,pes,ns_per_op,ns_min,ns_max,p999_ns,instr_per_op,frag,l1d_miss_per_op,l2_miss_per_op,mispredict_per_op,cest_per_op'
SUMMARY=$OUT/summary.csv
CG_DIR=$BIN/callgrind # profiles, for callgrind_annotate

note() { echo "bench: note: $*" >&2; }

# ---- helpers -----------------------------------------------------------------
# The value of key=VALUE in a line of figures.
kv() { awk -v k="$1" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }' <<<"$2"; }

# "median min max" of the numbers on stdin, one a line; nothing for none.
stats() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.1f %.1f %.1f\n",
  (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, v[1], v[NR] }'; }

# Timed runs on one cpu; at real-time priority only when asked (RT=1, as
# root): it holds the cpu from everything else for the whole run.
PIN=()
if command -v taskset >/dev/null 2>&1 && [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ]; then PIN=(taskset -c 1); fi
if [ "${RT:-0}" = 1 ]; then
  if chrt -f 10 true 2>/dev/null; then PIN=(chrt -f 10 "${PIN[@]}"); else note "RT=1: chrt -f 10 is not allowed here (root only): normal priority"; fi
fi

# "[k/n] what (elapsed)": where a suite is, one line per run.
progress() { # K N WHAT
  echo "  [$1/$2] $3 (${SECONDS}s)"
}

HAVE_VALGRIND=0
command -v valgrind >/dev/null 2>&1 && HAVE_VALGRIND=1

# Instructions per op of the scaling runs: Collected (the events of op_*
# and everything they call) over the ops the program says it made.
callgrind() { # OUTFILE COMMAND...
  local out=$1 log
  shift
  log=$(valgrind --tool=callgrind --toggle-collect='op_*' --callgrind-out-file="$out" "$@" 2>&1 >"$out.stdout")
  echo "$(kv ops "$(cat "$out.stdout")") $(awk '$2 == "Events" { for (i = 4; i <= NF; i++) e[i] = $i }
    $2 == "Collected" { for (i = 4; i <= NF; i++) v[e[i]] = $i; print v["Ir"] }' <<<"$log")"
}

# Waits until fewer than $1 background jobs run.
pool() { while [ "$(jobs -rp | wc -l)" -ge "$1" ]; do wait -n; done; }

# Replaces SUITE's rows of summary.csv with those in ROWS (no header), suites
# kept in the order core, scaling, collective, then any other.
summary_put() { # SUITE ROWS
  local suite=$1 rows=$2 tmp
  mkdir -p "$OUT"
  tmp=$(mktemp)
  { [ -f "$SUMMARY" ] && tail -n +2 "$SUMMARY" | awk -F, -v s="$suite" '$1 != s'; cat "$rows"; } |
    awk -F, '{ r = $1 == "core" ? 1 : $1 == "scaling" ? 2 : $1 == "collective" ? 3 : 4; print r "," $0 }' |
    sort -s -t, -n -k1,1 | cut -d, -f2- >"$tmp"
  { echo "$HEADER"; cat "$tmp"; } >"$SUMMARY"
  rm -f "$tmp"
}

human_live() { awk -v n="$1" 'BEGIN { if (n >= 1e6 && n % 1e6 == 0) print n / 1e6 "M"; else if (n >= 1e3 && n % 1e3 == 0) print n / 1e3 "k"; else print n }'; }
human_mib() { awk -v n="$1" 'BEGIN { if (n >= 1024 && n % 1024 == 0) print n / 1024 "GiB"; else print n "MiB" }'; }

# ---- core ------------------------------------------------------------------------
suite_core() {
  local tmp=$1 a w rep line allocators=() started=$SECONDS k=0 n
  for a in $ALLOCATORS; do
    if [ -x "$BIN/core_$a" ]; then allocators+=("$a"); else note "$a skipped: $BIN/core_$a is not built (its library is missing?)"; fi
  done
  [ ${#allocators[@]} -gt 0 ] || { note "no allocator is built (make bench-build)"; return; }
  set -- $WORKLOADS
  n=$(( ${#allocators[@]} * $# * (RUNS + 1) ))
  echo "core: ${allocators[*]} x workloads $WORKLOADS: $RUNS timed runs and a footprint run each (pinned: ${PIN[*]:-no}), then the counts"
  # Repetitions outermost, so a slow spell of the machine spreads over all.
  for rep in $(seq 1 "$RUNS"); do
    for a in "${allocators[@]}"; do
      for w in $WORKLOADS; do
        progress $((k += 1)) "$n" "core $a $w, timed run $rep/$RUNS"
        line=$("${PIN[@]}" "$BIN/core_$a" "$w") || { note "core $a $w failed"; continue; }
        echo "$line" >>"$tmp/core.$a.$w.runs"
      done
    done
  done
  for a in "${allocators[@]}"; do
    for w in $WORKLOADS; do
      progress $((k += 1)) "$n" "core $a $w, footprint"
      line=$("${PIN[@]}" "$BIN/core_$a" "$w" --footprint) && echo "$line" >"$tmp/core.$a.$w.fp"
    done
  done
  if command -v valgrind >/dev/null 2>&1; then
    echo "  the counts: bench/cest.sh, ${#allocators[@]} x $# callgrind runs, $JOBS at a time"
    BENCH_BIN=$BIN BENCH_JOBS=$JOBS bash bench/cest.sh --csv "$(tr -d ' ' <<<"$WORKLOADS")" "${allocators[@]}" >"$tmp/core.cest"
  else
    note "valgrind is missing: no counts per op"
  fi

  local rows=$tmp/core.rows ns p999 frag counts instr misses cest
  : >"$rows"
  for a in "${allocators[@]}"; do
    for w in $WORKLOADS; do
      ns=$( [ -f "$tmp/core.$a.$w.runs" ] && while read -r line; do kv ns_per_op "$line"; done <"$tmp/core.$a.$w.runs" | stats)
      p999=$( [ -f "$tmp/core.$a.$w.runs" ] && while read -r line; do kv p999_ns "$line"; done <"$tmp/core.$a.$w.runs" | stats | cut -d' ' -f1)
      # allocator,workload,ops,ir,l1d,lld,bm,cest,frag -> ir ; l1d,lld,bm ; cest
      counts=$(awk -F, -v a="$a" -v w="$w" '$1 == a && $2 == w { print $4 ";" $5 "," $6 "," $7 ";" $8 }' "$tmp/core.cest" 2>/dev/null)
      [ -n "$counts" ] || counts=";,,;"
      frag=
      if [ "$w" != a ] && [ -f "$tmp/core.$a.$w.fp" ]; then
        frag=$(awk -v f="$(kv frag "$(cat "$tmp/core.$a.$w.fp")")" 'BEGIN { if (f != "") printf "%.4f", f }')
      fi
      set -- $ns
      IFS=';' read -r instr misses cest <<<"$counts"
      echo "core,$a,$w,,${1:-},${2:-},${3:-},${p999:+${p999%.*}},$instr,$frag,$misses,$cest" >>"$rows"
    done
  done
  summary_put core "$rows"
  core_metadata "$tmp" "${allocators[@]}"
  plot_core "$SUMMARY" "$OUT/core.svg"
  echo "core: done in $((SECONDS - started))s"
}

# Each allocator's metadata (the figures of its adapter's describe), from
# its first timed run of each workload: bytes per used block after the
# timed loop, and a fresh heap's fixed overhead (bench/alloc_shmalloc.h).
core_metadata() { # TMP ALLOCATOR...
  local a w line csv=$OUT/metadata.csv tmp=$1
  shift
  echo "allocator,workload,used_blocks,meta_bytes,meta_per_block,meta_fixed,meta_fixed_pct" >"$csv"
  for a in "$@"; do
    for w in $WORKLOADS; do
      line=$(head -n 1 "$tmp/core.$a.$w.runs" 2>/dev/null) || continue
      [ -n "$(kv meta_fixed "$line")" ] || continue # figures of an adapter's describe
      echo "$a,$w,$(kv used_blocks "$line"),$(kv meta_bytes "$line"),$(kv meta_per_block "$line"),$(kv meta_fixed "$line"),$(kv meta_fixed_pct "$line")" >>"$csv"
    done
  done
  echo "core: metadata ($csv): bytes per used block after the timed loop; fixed: a fresh core on the heap"
  awk -F, 'NR > 1 { printf "  %-18s %s  %5s used  %6s B/block  fixed %s B (%s %%)\n", $1, $2, $3 == "" ? "-" : $3,
    $5 == "" ? "-" : $5, $6, $7 }' "$csv"
}

# ---- scaling -------------------------------------------------------------------------
suite_scaling() {
  local tmp=$1 live heap rep line status started=$SECONDS k=0 n
  [ -x "$BIN/scaling" ] || { note "$BIN/scaling is not built (make bench-build)"; return; }
  set -- $LIVES
  n=$#
  set -- $HEAPS_MIB
  n=$((n * $#))
  echo "scaling: workload b, live sets $LIVES x heaps $HEAPS_MIB MiB, $RUNS timed runs each, then callgrind"
  for live in $LIVES; do
    for heap in $HEAPS_MIB; do
      progress $((k += 1)) "$n" "scaling live $(human_live "$live"), heap $(human_mib "$heap")"
      for rep in $(seq 1 "$RUNS"); do
        line=$("${PIN[@]}" "$BIN/scaling" "$live" "$heap") || { note "scaling $live $heap failed"; break; }
        echo "$line" >>"$tmp/scaling.$live.$heap.runs"
        [ "$(kv status "$line")" = ok ] || break # nofit / oom: the same every time
      done
    done
  done
  if [ "$HAVE_VALGRIND" = 1 ]; then
    mkdir -p "$CG_DIR"
    for live in $LIVES; do
      for heap in $HEAPS_MIB; do
        [ "$(kv status "$(head -n 1 "$tmp/scaling.$live.$heap.runs" 2>/dev/null)")" = ok ] || continue
        # valgrind maps at most about 63 GiB in one piece: the largest heap
        # is counted at the largest size valgrind can map (column instr_heap_mib)
        local cg_heap=$heap
        [ "$heap" -gt 64512 ] && cg_heap=64512
        echo "$cg_heap" >"$tmp/scaling.$live.$heap.cgheap"
        # a 1M live set under valgrind takes a few GiB: run those alone
        if [ "$live" -ge 1000000 ]; then pool 1; else pool "$JOBS"; fi
        callgrind "$CG_DIR/scaling.$live.$heap.out" "$BIN/scaling" "$live" "$cg_heap" --callgrind \
          >"$tmp/scaling.$live.$heap.cg" &
        [ "$live" -ge 1000000 ] && wait
      done
    done
    wait
    echo "  callgrind runs done (${SECONDS}s)"
  else
    note "valgrind is missing: no instructions per op"
  fi

  local csv=$OUT/scaling.csv rows=$tmp/scaling.rows ns instr frag ops ir cg_heap
  mkdir -p "$OUT"
  echo "live,heap_mib,status,ns_per_op,ns_min,ns_max,instr_per_op,instr_heap_mib,frag" >"$csv"
  : >"$rows"
  for live in $LIVES; do
    for heap in $HEAPS_MIB; do
      line=$(head -n 1 "$tmp/scaling.$live.$heap.runs" 2>/dev/null)
      status=$(kv status "$line")
      if [ "$status" != ok ]; then
        case $status in
          nofit) status="skipped: needs $(kv need_mib "$line") MiB" ;;
          oom) status="skipped: an allocation failed" ;;
          *) status="failed" ;;
        esac
        echo "$live,$heap,$status,,,,,," >>"$csv"
        continue
      fi
      ns=$(while read -r line; do kv ns_per_op "$line"; done <"$tmp/scaling.$live.$heap.runs" | stats)
      frag=$(kv frag "$(head -n 1 "$tmp/scaling.$live.$heap.runs")")
      instr= cg_heap=
      if [ -s "$tmp/scaling.$live.$heap.cg" ]; then
        read -r ops ir _ <"$tmp/scaling.$live.$heap.cg"
        [ -n "${ops:-}" ] && [ -n "${ir:-}" ] && [ "$ops" -gt 0 ] && instr=$(awk -v i="$ir" -v o="$ops" 'BEGIN { printf "%.1f", i / o }')
        cg_heap=$(cat "$tmp/scaling.$live.$heap.cgheap")
      fi
      set -- $ns
      echo "$live,$heap,ok,$1,$2,$3,$instr,$cg_heap,$(awk -v f="$frag" 'BEGIN { printf "%.3f", f }')" >>"$csv"
      echo "scaling,shmalloc,b/live=$(human_live "$live")/heap=$(human_mib "$heap"),,$1,$2,$3,,$instr,$(awk -v f="$frag" 'BEGIN { printf "%.3f", f }')" >>"$rows"
    done
  done
  summary_put scaling "$rows"
  plot_scaling "$csv" "$OUT/scaling.png"
  echo "scaling: done in $((SECONDS - started))s"
}

# Two panels over heap size (log scale), one line per live set.
plot_scaling() { # CSV PNG
  local csv=$1 png=$2 dat live titles= xtics= heap
  command -v gnuplot >/dev/null 2>&1 || { note "gnuplot is missing (gnuplot-nox): no $png"; return; }
  dat=$(mktemp)
  for live in $LIVES; do # one gnuplot data block per live set
    awk -F, -v l="$live" '$1 == l && $3 == "ok" { print $2 / 1024, $4, $5, $6, ($7 == "" ? "NaN" : $7) }' "$csv" >>"$dat"
    printf '\n\n' >>"$dat"
    titles="$titles $(human_live "$live")"
  done
  for heap in $HEAPS_MIB; do xtics="${xtics:+$xtics, }\"$(human_mib "$heap")\" $(awk -v h="$heap" 'BEGIN { print h / 1024 }')"; done
  gnuplot <<EOF || note "gnuplot failed: no $png"
set terminal pngcairo noenhanced size 1400,560 font ",11"
set output "$png"
set datafile missing "NaN"
titles = "$titles"
set multiplot layout 1,2 title "shmalloc TLSF core, workload b: cost against heap size and live set"
set logscale x 2
set xlabel "heap size (mapped MAP_NORESERVE)"
set xtics ($xtics)
set xrange [$(awk -v l="$HEAPS_MIB" 'BEGIN { n = split(l, h, " "); lo = h[1]; hi = h[1]
  for (i = 2; i <= n; i++) { if (h[i] < lo) lo = h[i]; if (h[i] > hi) hi = h[i] }
  printf "%g:%g", lo / 1024 / 1.4, hi / 1024 * 1.4 }')]
set grid
set key bottom right
set yrange [0:*]
set ylabel "instructions per operation (callgrind)"
plot for [i=1:words(titles)] "$dat" index (i-1) using 1:5 with linespoints lw 2 pt 7 title "live ".word(titles, i)
set ylabel "ns per operation (median of runs; bars: min-max)"
set logscale y 2
set yrange [*:*]
plot for [i=1:words(titles)] "$dat" index (i-1) using 1:2:3:4 with yerrorlines lw 2 pt 7 title "live ".word(titles, i)
unset multiplot
EOF
  rm -f "$dat"
}

# ---- the table -------------------------------------------------------------------
print_table() {
  [ -f "$SUMMARY" ] || { note "no $SUMMARY yet"; return; }
  echo
  echo "== $SUMMARY"
  awk -F, '
    NR == 1 { next }
    {
      n++
      c[n, 1] = $1; c[n, 2] = $2; c[n, 3] = $3; c[n, 4] = $4 == "" ? "-" : $4
      c[n, 5] = $5 == "" ? "-" : $5 " (" $6 "-" $7 ")"
      c[n, 6] = $8 == "" ? "-" : $8
      c[n, 7] = $9 == "" ? "-" : $9
      c[n, 8] = $14 == "" ? "-" : $14
      c[n, 9] = $10 == "" ? "-" : $10
      c[n, 10] = $11 == "" ? "-" : $11 " / " $12
      c[n, 11] = $13 == "" ? "-" : $13
    }
    function cell(j, text) { # left-aligned names, right-aligned figures
      fmt = (j > 1 ? "  " : "") "%" (j >= 4 ? "" : "-") w[j] "s"
      printf fmt, text
    }
    END {
      split("suite|allocator|workload|PEs|ns/op median (min-max)|p99.9 ns|instr/op|CEst/op|frag|L1d / LL misses/op|mispredicted/op", h, "|")
      for (j = 1; j <= 11; j++) {
        w[j] = length(h[j])
        for (i = 1; i <= n; i++) if (length(c[i, j]) > w[j]) w[j] = length(c[i, j])
      }
      for (j = 1; j <= 11; j++) cell(j, h[j])
      printf "\n"
      for (j = 1; j <= 11; j++) { s = ""; while (length(s) < w[j]) s = s "-"; cell(j, s) }
      printf "\n"
      for (i = 1; i <= n; i++) {
        if (i > 1 && (c[i, 1] != c[i - 1, 1] || c[i, 2] != c[i - 1, 2])) printf "\n"
        for (j = 1; j <= 11; j++) cell(j, c[i, j])
        printf "\n"
      }
    }' "$SUMMARY"
  echo "frag: a region allocator's highest requested byte ever in use, a system allocator's peak RSS"
  echo "      growth, over the peak of live requested bytes"
  echo "counts per op: bench/cest.sh (callgrind, caches pinned: 32 KiB 8-way L1, 1 MiB 8-way LL)"
}

# ---- the plot ----------------------------------------------------------------------
# The core's main figures, one panel each: CEst per op and ns per op, a bar
# per allocator in each workload's group.
plot_core() { # SUMMARY SVG
  local csv=$1 svg=$2 dat names
  command -v gnuplot >/dev/null 2>&1 || { note "gnuplot is missing (gnuplot-nox): no $svg"; return; }
  dat=$(mktemp)
  # one row per workload: its name, then per allocator CEst and ns/op
  names=$(awk -F, '$1 == "core" && !seen[$2]++ { printf "%s ", $2 }' "$csv")
  awk -F, -v names="$names" '
    $1 == "core" { cest[$2, $3] = $14 == "" ? "NaN" : $14; ns[$2, $3] = $5 == "" ? "NaN" : $5; if (!w[$3]++) order[++nw] = $3 }
    END { n = split(names, a, " ")
      for (i = 1; i <= nw; i++) { line = order[i]
        for (j = 1; j <= n; j++) line = line " " cest[a[j], order[i]] " " ns[a[j], order[i]]
        print line } }' "$csv" >"$dat"
  [ -s "$dat" ] || { rm -f "$dat"; note "no core rows in $csv: no $svg"; return; }
  gnuplot <<EOF || note "gnuplot failed: no $svg"
set terminal svg noenhanced size 1100,440 font "sans,12" background "white"
set output "$svg"
set datafile missing "NaN"
names = "$names"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set xlabel "workload"
set yrange [0:*]
set multiplot layout 1,2 title "workloads a-d: each allocator's cost per op"
set ylabel "CEst per op (callgrind, caches pinned)"
plot for [i=1:words(names)] "$dat" using (column(2*i)):xtic(1) title word(names, i)
set ylabel "ns per op (median of timed runs)"
plot for [i=1:words(names)] "$dat" using (column(2*i+1)):xtic(1) title word(names, i)
unset multiplot
EOF
  rm -f "$dat"
  [ -s "$svg" ] && echo "core: plot $svg"
}

# ---- main ----------------------------------------------------------------------------
if [ "${BENCH_LIB:-0}" = 1 ]; then return 0 2>/dev/null || exit 0; fi
what=${1:-all}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$OUT"
case $what in
  all) echo "bench: 3 suites: core, scaling, collective"
       suite_core "$tmp"; suite_scaling "$tmp"; bash bench/collective.sh ;;
  core) suite_core "$tmp" ;;
  scaling) suite_scaling "$tmp" ;;
  table) ;;
  plot) plot_core "$SUMMARY" "$OUT/core.svg"; exit 0 ;;
  *) echo "usage: bench/run.sh all|core|scaling|table|plot" >&2; exit 1 ;;
esac
print_table
exit 0
