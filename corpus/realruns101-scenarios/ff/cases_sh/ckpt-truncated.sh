cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $(mn 42521 j21 --node-rank 0 --nproc-per-node 1) $S --steps 12 --resume work/ckpt-good/step00030.pt 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $(mn 42521 j21 --node-rank 1 --nproc-per-node 1) $S --steps 12 --resume work/nodeB/ckpt/step00030.pt 2>&1 | sed -u "s/^/1: /" ) &
wait
