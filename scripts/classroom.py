"""Classroom copies of the notebooks: `make student` and `make assignments`.

Every exercise in the notebooks is three cells: a stub that runs (untagged), a
solution (tag ``solution``) and a check (tag ``check``) that fails on the stub with
"Exercise N is not solved yet: ...".

* ``student``: ``build/student/NN_*.ipynb``, each notebook without its solution
  cells and with the outputs of its stub and check cells cleared (nbconvert's
  ``TagRemovePreprocessor``); everything else is kept as CI checked it.
* ``assignments``: ``build/nbgrader/``, an nbgrader course folder: its
  ``nbgrader_config.py`` and ``source/<NN_name>/<NN_name>.ipynb`` with nbgrader's
  cell metadata (solutions as solution cells, checks as autograded tests worth one
  point each), ready for ``nbgrader generate_assignment`` and ``nbgrader autograde``.

Usage: python scripts/classroom.py student|assignments [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import nbformat
from nbconvert.preprocessors import Preprocessor, TagRemovePreprocessor

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"

NBGRADER_CONFIG = """\
# nbgrader configuration of the TFRecord tutorials course (made by `make assignments`).
c = get_config()  # noqa: F821 (nbgrader provides it)
c.CourseDirectory.course_id = "tfrecord-tutorials"
# A released solution cell holds only this comment: the stub cell above it already
# defines every name the check uses, so a student copy runs and its checks fail cleanly.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE (replace the stub above)"}
# Executing a notebook (TensorFlow included) takes a while on a small machine.
c.ExecutePreprocessor.timeout = 600
"""


def tags(cell: nbformat.NotebookNode) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


class TagExercises(Preprocessor):
    """Tag the stub of every exercise (the code cell right before a solution) ``stub``,
    and number the exercises' cells in their metadata, so later steps find them by tag."""

    def preprocess(self, nb, resources):
        code = [cell for cell in nb.cells if cell.cell_type == "code"]
        number = 0
        for before, cell in zip(code, code[1:], strict=False):
            if "solution" in tags(cell):
                number += 1
                before.setdefault("metadata", {}).setdefault("tags", []).append("stub")
                cell.metadata["exercise"] = number
            elif "check" in tags(cell):
                cell.metadata["exercise"] = number
        return nb, resources


def student_copy(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` without solutions, stub and check outputs cleared."""
    nb = nbformat.read(path, as_version=4)
    nb, _ = TagExercises().preprocess(nb, {})
    remove = TagRemovePreprocessor(
        enabled=True,
        remove_cell_tags={"solution"},
        remove_all_outputs_tags={"stub", "check"},
    )
    nb, _ = remove.preprocess(nb, {})
    for cell in nb.cells:
        cell.metadata.pop("exercise", None)
        if "stub" in tags(cell):
            cell.metadata["tags"].remove("stub")
            if not cell.metadata["tags"]:
                del cell.metadata["tags"]
    return nb


class NbgraderCells(Preprocessor):
    """Give solution and check cells the metadata nbgrader reads (schema version 3)."""

    def preprocess_cell(self, cell, resources, index):
        number = cell.metadata.get("exercise")
        if cell.cell_type != "code" or number is None:
            return cell, resources
        if "solution" in tags(cell):
            cell.source = f"### BEGIN SOLUTION\n{cell.source}\n### END SOLUTION"
            grading = {"solution": True, "grade": False, "locked": False}
            grade_id = f"exercise-{number}-solution"
        else:
            grading = {"solution": False, "grade": True, "locked": True, "points": 1}
            grade_id = f"exercise-{number}-check"
        cell.metadata["nbgrader"] = {**grading, "grade_id": grade_id, "schema_version": 3}
        del cell.metadata["exercise"]
        return cell, resources


def assignment_source(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` as an nbgrader source notebook (outputs cleared)."""
    nb = nbformat.read(path, as_version=4)
    nb, _ = TagExercises().preprocess(nb, {})
    nb, _ = NbgraderCells().preprocess(nb, {})
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("exercise", None)
        if "stub" in tags(cell):
            cell.metadata["tags"].remove("stub")
    return nb


def build_student(notebooks: list[Path]) -> Path:
    out = BUILD / "student"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for path in notebooks:
        nbformat.write(student_copy(path), out / path.name)
    return out


def build_assignments(notebooks: list[Path]) -> Path:
    out = BUILD / "nbgrader"
    shutil.rmtree(out, ignore_errors=True)
    (out / "source").mkdir(parents=True)
    (out / "nbgrader_config.py").write_text(NBGRADER_CONFIG)
    for path in notebooks:
        folder = out / "source" / path.stem
        folder.mkdir()
        nbformat.write(assignment_source(path), folder / path.name)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("student", "assignments"))
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args()
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    build = build_student if args.what == "student" else build_assignments
    out = build(notebooks)
    print(f"wrote {len(notebooks)} notebooks to {out.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
