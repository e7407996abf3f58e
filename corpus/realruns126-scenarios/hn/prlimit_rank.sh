#!/bin/bash
# usage: prlimit_rank.sh RANK HEADROOM_MB [resource-option]  -- waits for the torchrun worker with RANK=$1 and
# applies prlimit to it (default: --as = current VmSize + headroom)
R=$1; H=$2; OPT=${3:-as}
for i in $(seq 1 120); do
  for p in $(pgrep -f "scenarios/"); do
    [ "$(readlink /proc/$p/cwd)" = /work/rr126/hn ] || continue   # only this producer's own runs
    if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "RANK=$R"; then
      if [ "$OPT" = as ]; then
        sleep 8
        vm=$(awk '/VmSize/{print $2}' /proc/$p/status); lim=$(( (vm/1024 + H) * 1024 * 1024 ))
        prlimit --pid $p --as=$lim:$lim && echo "applied --as=$lim to pid $p (rank $R)" >&2
      else
        sleep 8
        if [ "$OPT" = cpu ]; then  # H = seconds of CPU on top of what the rank has used so far
          used=$(awk '{print int(($14+$15)/100)}' /proc/$p/stat); H=$((used + H))
        fi
        prlimit --pid $p --$OPT=$H:$((H+30)) && echo "applied --$OPT=$H to pid $p (rank $R)" >&2
      fi
      exit 0
    fi
  done
  sleep 0.5
done
