"""Tiny helper: write a list of cell sources as a notebook."""
import nbformat
def write_nb(cells, path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(c[3:]) if c.startswith("md:") else nbformat.v4.new_code_cell(c.strip("\n")) for c in cells]
    nbformat.write(nb, path)
    print("wrote", path, "with", len(cells), "cells")
