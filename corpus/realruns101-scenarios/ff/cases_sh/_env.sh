export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1
TR=/work/rrvenv/bin/torchrun
PY=/work/rrvenv/bin/python
S=scenarios/mn_train.py
# torchrun for a 2-'node' job on this host: mn PORT JOBID [extra torchrun args]
mn() { local port=$1 id=$2; shift 2; echo "$TR --nnodes 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:$port --rdzv-id $id --max-restarts 0 $*"; }
