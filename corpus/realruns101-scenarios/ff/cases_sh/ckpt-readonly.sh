cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 setpriv --reuid=65534 --regid=65534 --clear-groups $(mn 42516 j16 --node-rank 0 --nproc-per-node 1) $S --steps 20 --ckpt-dir work/ckpt-shared --save-every 10 --noisy 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $(mn 42516 j16 --node-rank 1 --nproc-per-node 1) $S --steps 20 --noisy 2>&1 | sed -u "s/^/1: /" ) &
wait
