"""Classroom copies (`make assignments`): nbgrader grades the exercises as they are meant.

nbgrader must give the solved notebook full marks and the released one zero on every
test cell. (Student copies are executed in tests/test_notebook_runs.py.)
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import classroom  # noqa: E402  (a script, not a package)

# nbgrader executes each notebook twice (solved and released): two of the quickest.
GRADED = ["01_roundtrip_raw_bytes", "06_inspect_tfrecord_files"]


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
