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

Both folders are emptied at the start of a build, but only if an earlier build made them
(it leaves a marker file, ``.made-by-build-docs``, in each): any other existing folder, the
checkout and every folder that holds it are refused, so a mistyped ``--out`` deletes nothing.

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
MARKER = ".made-by-build-docs"


class RefusedFolder(Exception):
    """A folder the build must not empty; the message says which and why."""


def fresh_folder(folder: Path) -> Path:
    """Make ``folder`` empty for a build (but for the marker); return it, resolved.

    Raises:
        RefusedFolder: if ``folder`` is the checkout or holds it, or exists, is not empty
            and has no marker (it was not made by this script).
    """
    folder = folder.resolve()
    if folder == ROOT or ROOT.is_relative_to(folder):
        raise RefusedFolder(f"{folder} is this checkout or holds it; choose a folder inside build/")
    if folder.exists():
        if (folder / MARKER).is_file():
            shutil.rmtree(folder)
        elif folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        else:
            raise RefusedFolder(
                f"{folder} exists and was not made by this script (no {MARKER} in it); "
                "choose another folder, or remove it yourself (make clean removes build/)"
            )
    folder.mkdir(parents=True)
    (folder / MARKER).write_text("made by scripts/build_docs.py, which empties it on every build\n")
    return folder


def stage(staging: Path) -> list[Path]:
    """Fill the empty ``staging`` folder with everything Sphinx reads; return the notebooks."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "docs", staging, ignore=ignore, dirs_exist_ok=True)
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
    for folder in (staging, out):  # both checked and emptied before anything is written
        fresh_folder(folder)
    notebooks = stage(staging)
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
    try:
        status = build(args.out.resolve(), args.staging.resolve())
    except RefusedFolder as error:
        print(f"build_docs: {error}", file=sys.stderr)
        return 2
    print(f"{'done' if status == 0 else 'FAILED'} in {time.perf_counter() - start:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
