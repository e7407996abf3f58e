cd /work/rr101/ff && . cases_sh/_env.sh
timeout 170 $PY scenarios/spawn_train.py --port 42530 --steps 60 2>&1
