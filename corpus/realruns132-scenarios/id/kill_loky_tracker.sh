#!/bin/bash
# (version used for r132id-sklearn-loky-tracker-relaunch, run as ./kill_loky.sh from /work/rr132/id)
# start the GridSearch, then SIGKILL the first loky child of the python process after ~8 s;
# that child turned out to be joblib/loky's resource_tracker, not a worker.
cd /work/rr132/id
timeout 180 /work/rrvenv/bin/python scenarios/sklearn_jobs.py --fault killworker &
main=$!
for i in $(seq 1 60); do
  sleep 1
  w=$(pgrep -P $main -f loky | head -1)
  [ -z "$w" ] && w=$(pgrep -P $main | while read c; do pgrep -P $c; done | head -1)
  if [ -n "$w" ] && [ $i -ge 8 ]; then kill -9 $w; break; fi
done
wait $main
