cd /work/rr101/ff && . cases_sh/_env.sh
rm -rf r101ff-healthy-logdir.d; mkdir -p r101ff-healthy-logdir.d
( NODE_NAME=node-a timeout 170 $(mn 42533 j33 --node-rank 0 --nproc-per-node 1 --log-dir r101ff-healthy-logdir.d/node-a --redirects 3 --tee 3) $S --steps 20 --noisy > r101ff-healthy-logdir.d/node-a.console 2>&1 ) &
sleep 1
( NODE_NAME=node-b timeout 170 $(mn 42533 j33 --node-rank 1 --nproc-per-node 1 --log-dir r101ff-healthy-logdir.d/node-b --redirects 3 --tee 3) $S --steps 20 --noisy > r101ff-healthy-logdir.d/node-b.console 2>&1 ) &
wait
