cd /work/rr101/ff && . cases_sh/_env.sh
mkdir -p work/ckpt-good && RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=42531 timeout 170 $PY $S --steps 30 --tqdm --noisy --ckpt-dir work/ckpt-good --save-every 10 2>&1
