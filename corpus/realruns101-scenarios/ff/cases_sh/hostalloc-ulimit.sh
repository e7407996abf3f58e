cd /work/rr101/ff && . cases_sh/_env.sh
D=r101ff-hostalloc-ulimit.d; mkdir -p $D
( NODE_NAME=host-a timeout 150 $(mn 42512 j12 --node-rank 0 --nproc-per-node 1) $S --steps 12 --use-logging > $D/host-a.log 2>&1 ) &
sleep 1
( ulimit -v 6000000; NODE_NAME=host-b timeout 150 $(mn 42512 j12 --node-rank 1 --nproc-per-node 1) $S --steps 12 --use-logging --fault hostalloc --fault-step 4 > $D/host-b.log 2>&1 ) &
wait
