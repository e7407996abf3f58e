cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $(mn 42519 j19 --node-rank 0 --nproc-per-node 1 --log-dir work/logs19a --redirects 3 --tee 3) $S --model lm --vocab 128 --data-dir work/nodeA/lm --steps 20 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $(mn 42519 j19 --node-rank 1 --nproc-per-node 1 --log-dir work/logs19b --redirects 3 --tee 3) $S --model lm --vocab 128 --data-dir work/nodeB/lm --steps 20 2>&1 | sed -u "s/^/1: /" ) &
wait
