cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $(mn 42522 j22 --node-rank 0 --nproc-per-node 1 --tee 3) $S --steps 12 --resume work/ckpt-good/step00030.pt 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $(mn 42522 j22 --node-rank 1 --nproc-per-node 1 --tee 3) $S --steps 12 --resume work/ckpt-v1/step00030.pt 2>&1 | sed -u "s/^/1: /" ) &
wait
