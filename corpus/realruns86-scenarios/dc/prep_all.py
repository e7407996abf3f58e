"""Prepare all data variants used by the dc cases (calls ddp_faults.prep)."""
import sys, os
sys.path.insert(0, os.path.dirname(__file__))
import ddp_faults as d
variants = [
    ("data_3sh", 3, -1, None),
    ("data_extracol1", 4, 1, "extra-column"),
    ("data_missingcls2", 4, 2, "missing-class"),
    ("data_noaux3", 4, 3, "no-aux"),
    ("data_collabels1", 4, 1, "column-labels"),
    ("data_nodomain2", 4, 2, "meta-without-domain"),
    ("data_nodomain1", 4, 1, "meta-without-domain"),
    ("data_longdoc1", 4, 1, "long-outlier"),
    ("data_manyfiles2", 4, 2, "many-files"),
    ("data_perdoc1", 4, 1, "per-doc-sources"),
]
for name, shards, fr, bug in variants:
    a = d.build_parser().parse_args(["prep", "--data", name, "--shards", str(shards), "--fault-shard", str(fr)] + (["--shard-bug", bug] if bug else []))
    d.prep(a)
