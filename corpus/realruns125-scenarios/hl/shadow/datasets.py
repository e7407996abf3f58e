# project-local helper module (predates the HF `datasets` dependency)
import torch

def make_split(x, y, frac=0.9):
    n = int(len(x) * frac)
    return (x[:n], y[:n]), (x[n:], y[n:])
