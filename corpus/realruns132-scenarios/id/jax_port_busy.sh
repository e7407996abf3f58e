#!/bin/bash
# a stale process (left from an earlier experiment) still listens on the JAX coordinator port 46331
cd /work/rr132/id
/work/rrvenv/bin/python scenarios/hold_port.py 46331 150 & hp=$!
sleep 1
timeout 120 /work/rrvenv/bin/python -m torch.distributed.run --nproc-per-node 2 --master-port 46325 scenarios/jax_flax.py --fault none --steps 30
rc=$?
kill $hp
exit $rc
