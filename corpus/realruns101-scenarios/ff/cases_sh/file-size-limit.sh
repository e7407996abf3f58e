cd /work/rr101/ff && . cases_sh/_env.sh
( ulimit -f 150; NODE_NAME=node-a timeout 150 $(mn 42534 j34 --node-rank 0 --nproc-per-node 1) $S --steps 20 --ckpt-dir work/evalout --dump-preds-every 5 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $(mn 42534 j34 --node-rank 1 --nproc-per-node 1) $S --steps 20 2>&1 | sed -u "s/^/1: /" ) &
wait
