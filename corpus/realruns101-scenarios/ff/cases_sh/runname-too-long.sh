cd /work/rr101/ff && . cases_sh/_env.sh
N="ablation of warmup vs no warmup on the 2-node cpu cluster, rerun after fixing the sampler seed; compare against exp7 and exp9 (see wiki page training/ablations/2026-12), keep the same data order, tokenizer v3, eval every 8 steps"
( NODE_NAME=node-a timeout 150 $(mn 42538 j38 --node-rank 0 --nproc-per-node 1 --tee 3) scenarios/run_artifacts.py --notes "$N" --tags "ablation,warmup,cpu,2node,sampler-fix,tokenizer-v3" 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $(mn 42538 j38 --node-rank 1 --nproc-per-node 1 --tee 3) scenarios/run_artifacts.py --notes "$N" --tags "ablation,warmup,cpu,2node,sampler-fix,tokenizer-v3" 2>&1 | sed -u "s/^/1: /" ) &
wait
