"""Classroom copies of the notebooks: `make student` and `make assignments`.

How an exercise is laid out (CONTRIBUTING.md, "Exercises"): under ``## Exercises``, the task
(markdown), the learner's stub (an untagged code cell that runs), then its check (tags ``check``
and ``raises-exception``), which defines ``check_exercise_N()`` and calls it: on the stub it
raises "Exercise N is not solved yet: ...", and Run All goes on. The section ``## Solutions``,
after ``## Key points`` and before the last cell (the link to the next notebook), holds for each
exercise a markdown line, the solution (tag ``solution``) and a cell that calls
``check_exercise_N()`` again (tag ``solution-check``).

* ``student``: ``build/student/NN_*.ipynb``, each notebook without its Solutions section (its
  heading cell becomes a one-line note) and with the outputs of its stubs and checks cleared;
  everything else is kept as CI checked it.
* ``assignments``: ``build/nbgrader/``, an nbgrader course folder: its ``nbgrader_config.py``
  and ``source/<NN_name>/<NN_name>.ipynb``, where each solution sits right after its stub as
  an nbgrader solution cell and each check is an autograded test worth one point (the
  Solutions section is left out), ready for ``nbgrader generate_assignment`` and ``nbgrader
  autograde``.

Usage: python scripts/classroom.py student|assignments [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

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

#: What the Solutions heading says in a student copy.
STUDENT_NOTE = (
    "## Solutions\n\nThis copy leaves the solutions out: the check under each exercise "
    "tells you when yours is right."
)

HEADING = re.compile(r"^## ", re.M)
CHECK_CALL = re.compile(r"^check_exercise_(\d+)\(\)$")


def tags(cell: nbformat.NotebookNode) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def section(nb: nbformat.NotebookNode, title: str) -> tuple[int, int] | None:
    """(first, end) cell indexes of the ``## title`` section: its heading cell up to the next
    ``## `` heading or, at the end of the notebook, the last cell (the link to the next one)."""
    starts = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]
    first = next((i for i in starts if nb.cells[i].source.startswith(f"## {title}")), None)
    if first is None:
        return None
    later = [i for i in starts if i > first and HEADING.search(nb.cells[i].source)]
    return first, later[0] if later else len(nb.cells) - 1


@dataclass(frozen=True)
class Exercise:
    """Cell indexes of exercise ``number``: its stub and check (under Exercises), and its
    solution and the solution's check (under Solutions)."""

    number: int
    stub: int
    check: int
    solution: int
    solution_check: int


def exercises(nb: nbformat.NotebookNode) -> list[Exercise]:
    """The exercises of ``nb``, in order; ValueError where the layout above is not kept."""
    sections = {name: section(nb, name) for name in ("Exercises", "Solutions")}
    missing = [name for name, where in sections.items() if where is None]
    if missing:
        raise ValueError(f"no '## {' or '.join(missing)}' section")
    (first, end), (solutions_first, solutions_end) = sections["Exercises"], sections["Solutions"]
    code = [i for i in range(first, end) if nb.cells[i].cell_type == "code"]
    checks = [i for i in code if "check" in tags(nb.cells[i])]
    answers = [i for i in range(solutions_first, solutions_end) if nb.cells[i].cell_type == "code"]
    if len(answers) != 2 * len(checks):
        raise ValueError(
            f"{len(checks)} checks under Exercises, {len(answers)} code cells under Solutions "
            "(a solution and its check per exercise)"
        )
    found = []
    for number, (check, solution, again) in enumerate(
        zip(checks, answers[::2], answers[1::2], strict=True), start=1
    ):
        before = code[code.index(check) - 1] if code.index(check) > 0 else None
        if before is None or tags(nb.cells[before]):
            raise ValueError(f"exercise {number}: its check must follow an untagged stub cell")
        if "raises-exception" not in tags(nb.cells[check]):
            raise ValueError(f"exercise {number}: its check must be tagged raises-exception")
        if "solution" not in tags(nb.cells[solution]):
            raise ValueError(f"exercise {number}: cell {solution} is not tagged solution")
        call = CHECK_CALL.match(nb.cells[again].source.strip())
        if "solution-check" not in tags(nb.cells[again]) or not call or int(call[1]) != number:
            raise ValueError(
                f"exercise {number}: the solution must be followed by a cell tagged "
                f"solution-check that calls check_exercise_{number}()"
            )
        found.append(Exercise(number, before, check, solution, again))
    return found


def student_copy(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` without its Solutions section, stub and check outputs cleared."""
    nb = nbformat.read(path, as_version=4)
    listed = exercises(nb)
    first, end = section(nb, "Solutions")
    for exercise in listed:
        for index in (exercise.stub, exercise.check):
            nb.cells[index].outputs, nb.cells[index].execution_count = [], None
    nb.cells[first] = nbformat.v4.new_markdown_cell(STUDENT_NOTE, id=nb.cells[first].id)
    del nb.cells[first + 1 : end]
    return nb


def grade(cell: nbformat.NotebookNode, number: int, role: str, **grading: object) -> None:
    """Give ``cell`` the metadata nbgrader reads (schema version 3) for exercise ``number``."""
    grade_id = f"exercise-{number}-{role}"
    cell.metadata["nbgrader"] = {**grading, "grade_id": grade_id, "schema_version": 3}


def assignment_source(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` as an nbgrader source notebook (outputs cleared): each
    solution right after its stub as a solution cell, each check an autograded test, and no
    Solutions section."""
    nb = nbformat.read(path, as_version=4)
    listed = exercises(nb)
    first, end = section(nb, "Solutions")
    cells = list(nb.cells)
    for exercise in reversed(listed):  # from the last, so that earlier indexes stay valid
        solution = copy.deepcopy(nb.cells[exercise.solution])
        solution.source = f"### BEGIN SOLUTION\n{solution.source}\n### END SOLUTION"
        grade(solution, exercise.number, "solution", solution=True, grade=False, locked=False)
        check = cells[exercise.check]
        grade(check, exercise.number, "check", solution=False, grade=True, locked=True, points=1)
        cells.insert(exercise.check, solution)
    shift = len(listed)  # the solutions inserted before the Solutions section
    del cells[first + shift : end + shift]
    nb.cells = cells
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
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
