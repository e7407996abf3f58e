#!/bin/bash
# Launch two torchrun agents on this machine as node0 / node1 of one c10d rendezvous.
# Each agent's merged stdout+stderr is prefixed with its node name (sed -u) and appended
# line by line to one log, as a multi-node job collector stores it.
# usage: two_nodes.sh LOG PORT "AGENT0_EXTRA" "AGENT1_EXTRA" NODE1_DELAY -- torchrun-args (incl. --nnodes) script args...
# optional env KILL_NODE1="SIG SECONDS": send SIG to node1's torchrun agent process SECONDS after it started
LOG=$1; PORT=$2; EX0=$3; EX1=$4; DELAY=$5; shift 6
: > "$LOG"
TR=/work/rrvenv/bin/torchrun
timeout 180 $TR --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:$PORT --rdzv-id job$PORT $EX0 "$@" > >(sed -u 's/^/node0: /' >> "$LOG") 2>&1 &
P0=$!
sleep "$DELAY"
timeout 180 $TR --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:$PORT --rdzv-id job$PORT $EX1 "$@" > >(sed -u 's/^/node1: /' >> "$LOG") 2>&1 &
P1=$!
if [ -n "$KILL_NODE1" ]; then
  set -- $KILL_NODE1
  sleep "$2"
  AGENT1=$(pgrep -P $P1 -f torchrun)
  echo "[two_nodes.sh] kill -$1 $AGENT1 (node1 agent)" >&2
  kill -"$1" "$AGENT1"
fi
wait $P0 $P1
sleep 1
