"""Build the documentation site (`make docs`): build/html/index.html and one page per notebook.

Sphinx and MyST-NB render every notebook from its stored outputs (nothing is re-executed:
the site shows exactly what strict nbval checked), with an API reference of ``helpers``
made from the docstrings. Warnings are errors.

Sphinx reads a fresh staging folder (``build/docs_src/`` by default) that holds:

* a copy of ``docs/`` (configuration, pages, CSS, templates) and of README.md (the
  landing page takes its introduction and set-up commands from it);
* ``notebooks/NN_*.ipynb``, every notebook (found by the same pattern as `make notebooks`);
* ``_extra/notebooks/`` and ``_extra/student/``, the notebooks and their student copies
  (made by scripts/classroom.py, as `make student` makes them), copied into the site for
  download next to each page.

Usage: python scripts/build_docs.py [--out build/html] [--staging build/docs_src]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import nbformat
from sphinx.cmd.build import build_main

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import classroom  # noqa: E402  (a script, not a package)

NOTEBOOKS = "[0-9][0-9]_*.ipynb"


def stage(staging: Path) -> list[Path]:
    """Fill a fresh ``staging`` folder with everything Sphinx reads; return the notebooks."""
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(ROOT / "docs", staging, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "README.md", staging / "README.md")
    notebooks = sorted((ROOT / "notebooks").glob(NOTEBOOKS))
    for folder in ("notebooks", "_extra/notebooks", "_extra/student"):
        (staging / folder).mkdir(parents=True)
    for path in notebooks:
        shutil.copy(path, staging / "notebooks" / path.name)
        shutil.copy(path, staging / "_extra" / "notebooks" / path.name)
        nbformat.write(classroom.student_copy(path), staging / "_extra" / "student" / path.name)
    return notebooks


def build(out: Path, staging: Path) -> int:
    """Stage the sources and run Sphinx (warnings are errors); Sphinx's exit status."""
    notebooks = stage(staging)
    shutil.rmtree(out, ignore_errors=True)
    args = ["-W", "--keep-going", "-q", "-E", "-b", "html", "-d", str(staging / ".doctrees")]
    status = build_main([*args, str(staging), str(out)])
    if status == 0:
        print(f"built {len(notebooks)} notebook pages and the API reference into {out}/")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "html")
    parser.add_argument("--staging", type=Path, default=ROOT / "build" / "docs_src")
    args = parser.parse_args()
    start = time.perf_counter()
    status = build(args.out.resolve(), args.staging.resolve())
    print(f"{'done' if status == 0 else 'FAILED'} in {time.perf_counter() - start:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
