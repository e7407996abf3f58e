cd /work/rr101/ff && /work/rrvenv/bin/python scenarios/make_ckpts.py
