"""Execute notebooks in place, top to bottom, in a fresh kernel: `make notebooks`.

This is the only way the project makes notebook outputs. Each notebook runs
from its own folder (as in JupyterLab and under nbval) with the kernel of the
environment running this script. A notebook that writes to stderr, or raises in
a cell not tagged ``raises-exception``, is reported and the script exits 1, so
noisy or broken outputs never get committed.

Usage: python scripts/run_notebooks.py notebooks/01_*.ipynb [...]
       python scripts/run_notebooks.py --no-save notebooks/*.ipynb   (execute and check only)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

from helpers._tensorflow import QUIET_ENVIRONMENT

os.environ.update(QUIET_ENVIRONMENT)  # the kernels inherit it
os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")


def problems(nb: nbformat.NotebookNode) -> list[str]:
    """Stderr output and unexpected errors in an executed notebook."""
    found = []
    for number, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code":
            continue
        allowed_error = "raises-exception" in cell.get("metadata", {}).get("tags", [])
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                found.append(f"cell {number}: stderr: {output['text'][:300]!r}")
            if output.get("output_type") == "error" and not allowed_error:
                found.append(f"cell {number}: {output['ename']}: {output['evalue'][:300]}")
    return found


def run(path: Path, timeout: int, save: bool = True) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,  # errors are checked below, cell by cell
        record_timing=False,  # no execution timestamps in committed notebooks
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    # One stream output per print run: the kernel flushes on a timer, which can split a line in two.
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    found = problems(nb)
    if save and not found:
        nbformat.write(nb, path)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    parser.add_argument("--no-save", action="store_true", help="execute and check, write nothing")
    args = parser.parse_args()
    failed = False
    for path in args.notebooks:
        start = time.perf_counter()
        found = run(path, args.timeout, save=not args.no_save)
        status = "ok" if not found else "NOT SAVED"
        print(f"{path}: {status} ({time.perf_counter() - start:.1f} s)")
        for line in found:
            print(f"  {line}")
        failed |= bool(found)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
