"""Classroom copies (`make student`, `make assignments`): the exercise checks are real.

A student copy must hold no solution, must run top to bottom, and must fail only in
its check cells, each with its own exercise's message. nbgrader must give the solved
notebook full marks and the released one zero on every test cell.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import classroom  # noqa: E402  (a script, not a package)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# nbgrader executes each notebook twice (solved and released): two of the quickest.
GRADED = ["01_roundtrip_raw_bytes", "06_inspect_tfrecord_files"]


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def execute(nb, folder: Path):
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_student_copy_has_no_solutions_and_fails_only_in_checks(path, tmp_path):
    original = nbformat.read(path, as_version=4)
    solutions = [c.source for c in original.cells if "solution" in tags(c)]
    student = classroom.student_copy(path)
    assert not [c for c in student.cells if "solution" in tags(c)]
    sources = [c.source for c in student.cells]
    assert not [s for s in solutions if s in sources], "solution code left in the student copy"
    checks = [c for c in student.cells if "check" in tags(c)]
    assert len(checks) == len(solutions) >= 2
    assert all(c.outputs == [] for c in checks), "check outputs must be cleared"

    execute(student, tmp_path)
    failures = []
    for cell in student.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                failures.append((tags(cell), output.ename, output.evalue))
    expected = [
        (["check"], "AssertionError", f"Exercise {n} is not solved yet")
        for n in range(1, len(checks) + 1)
    ]
    found = [(t, ename, evalue.split(":")[0]) for t, ename, evalue in failures]
    allowed = [f for f in found if "raises-exception" in f[0]]
    assert [f for f in found if f not in allowed] == expected, failures


def nbgrader(*args, cwd):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        [Path(sys.executable).parent / "nbgrader", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", GRADED)
def test_nbgrader_gives_full_marks_to_solutions_and_zero_to_the_release(name, tmp_path):
    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(classroom.NBGRADER_CONFIG)
    (course / "source" / name).mkdir(parents=True)
    nbformat.write(
        classroom.assignment_source(ROOT / "notebooks" / f"{name}.ipynb"),
        course / "source" / name / f"{name}.ipynb",
    )
    nbgrader("generate_assignment", name, "--force", cwd=course)
    for student, folder in (("solved", "source"), ("released", "release")):
        (course / "submitted" / student / name).mkdir(parents=True)
        shutil.copy(course / folder / name / f"{name}.ipynb", course / "submitted" / student / name)
    nbgrader("autograde", name, cwd=course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        scores = {}
        for student in ("solved", "released"):
            submission = gradebook.find_submission(name, student)
            grades = [g for notebook in submission.notebooks for g in notebook.grades]
            scores[student] = [(g.score, g.max_score) for g in grades]
    assert len(scores["solved"]) >= 2
    assert all(score == maximum > 0 for score, maximum in scores["solved"]), scores
    assert all(score == 0 for score, _ in scores["released"]), scores
