cd /work/rr151/kk
for i in 0 1; do
  timeout 150 /work/rrvenv/bin/python scenarios/jax_train.py --fault ${FAULT:-die} --nprocs 2 --proc-id $i --port ${PORT:-48611} --steps ${STEPS:-30} --fail-step 6 &
done
wait
