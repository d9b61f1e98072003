# bench/rounds.sh - sourced by bench/collective.sh and bench/cluster.sh:
# the figures of runs repeated in rounds, reduced and printed the same way.
# A run's figure is a line "label,call,where,ns" (where: a PE count or a
# layout).  The floor probe (bench/floor.c) runs before and after them.

floor_probe() { # FLOORS: runs the probe, prints it, adds its round trip (ns) to FLOORS
    local out
    out=$("$B/bench/floor") && echo "$out" && sed -n 's/.*round trip \([0-9]*\) ns.*/\1/p' <<<"$out" >>"$1"
}

floor_trip() { # FLOORS: the median round trip (of two, the lower)
    sort -n "$1" | awk '{ v[++n] = $1 } END { print v[int((n + 1) / 2)] }'
}

rounds_run() { # RUNS LABEL WHERE COMMAND...: the run's figures, each its median of batches, to RUNS
    local runs=$1 label=$2 where=$3 out
    shift 3
    if ! out=$(timeout 300 "$@" 2>/dev/null); then echo "note: $label at $where did not run"; return; fi
    grep -E '^[a-z_0-9A-Z]+,[0-9]' <<<"$out" |
        awk -F, -v a="$label" -v w="$where" '{ print a "," $1 "," w "," $2 }' >>"$runs"
}

rounds_median() { # RUNS: "label,call,where,median,min,max" over the rounds
    sort -t, -k1,3 -k4,4n "$1" | awk -F, '
      function flush() { if (n) printf "%s,%d,%d,%d\n", key, v[int((n + 1) / 2)], v[1], v[n]; n = 0 }
      { k = $1 "," $2 "," $3; if (k != key) { flush(); key = k } v[++n] = $4 }
      END { flush() }'
}

rounds_table() { # MEDIANS TRIP: each figure x the one-way floor (TRIP / 2 ns) and x Open MPI's
    awk -F, -v floor="$2" '
      { m[$1 "," $2 "," $3] = $4; r[$1 "," $2 "," $3] = $5 "-" $6; calls[$2] = 1; at[$3] = 1; labels[$1] = 1 }
      END {
        for (c in calls) for (w in at) for (l in labels) {
          k = l "," c "," w
          if (!(k in m)) continue
          line = sprintf("%-40s %-6s %-18s %9d (%s)", c, w, l, m[k], r[k])
          if (floor > 0) line = line sprintf("  x%.2f floor", m[k] / (floor / 2))
          o = "openmpi-oshmem," c "," w
          if (l != "openmpi-oshmem" && (o in m)) line = line sprintf("  x%.2f Open MPI", m[k] / m[o])
          print line
        }
      }' "$1" | sort -k1,1 -k2,2V -k3,3
}
