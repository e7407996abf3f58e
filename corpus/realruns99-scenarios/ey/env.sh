export PYTHONPATH=/work/rr99/ey/pylib
export PATH=/work/rrvenv/bin:/work/rr99/ey/pylib/bin:$PATH
export JUPYTER_PATH=/work/rr99/ey/jupyter/share:/work/rr99/ey/pylib/share/jupyter
export JUPYTER_CONFIG_DIR=/work/rr99/ey/jupyter/config
export JUPYTER_DATA_DIR=/work/rr99/ey/jupyter/share
export JUPYTER_RUNTIME_DIR=/work/rr99/ey/jupyter/runtime
export IPYTHONDIR=/work/rr99/ey/jupyter/ipython
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HOME=/work/rr99/ey/hfhome
export OMP_NUM_THREADS=1
cd /work/rr99/ey
