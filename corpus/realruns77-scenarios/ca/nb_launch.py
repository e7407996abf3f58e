"""Notebook family: launching a training script from a notebook cell with a shell escape
(`!torchrun ...`, `!python -m torch.distributed.run ...`, `%run ...`), as users do in Jupyter.
python nb_launch.py --out X.ipynb --cell 'CMD' [--cell 'CMD2' ...] [--pre 'python code']"""
import argparse, sys
sys.path.insert(0, "/work/rr77/ca/tools")
from nbmk import write_nb
ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--pre", action="append", default=[])
ap.add_argument("--cell", action="append", default=[])
a = ap.parse_args()
cells = ["import os, torch\nos.chdir('/work/rr77/ca/work')\nprint(torch.__version__, os.cpu_count(), 'cpus')"]
cells += a.pre
cells += a.cell
write_nb(cells, a.out)
