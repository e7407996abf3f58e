cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $(mn 42515 j15 --node-rank 0 --nproc-per-node 1 --tee 3) $S --steps 30 --ckpt-dir work/ckpt-a --save-every 10 --hidden 128 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $(mn 42515 j15 --node-rank 1 --nproc-per-node 1 --tee 3) $S --steps 30 --hidden 128 2>&1 | sed -u "s/^/1: /" ) &
wait
