"""The notebook checks themselves (tests/notebook_checks.py), on small made-up notebooks.

The checks on the real notebooks run as part of each notebook's group of tests (conftest.py);
these tests show that the figure comparison tolerates float noise and nothing more, and that
the grading and student-copy checks fail when they should.
"""

import io
import sys
from base64 import b64encode
from pathlib import Path

import nbformat
import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
import notebook_checks as nc  # noqa: E402


def png_output(picture: np.ndarray) -> dict:
    buffer = io.BytesIO()
    Image.fromarray(picture.astype(np.uint8)).save(buffer, format="PNG")
    data = {"image/png": b64encode(buffer.getvalue()).decode(), "text/plain": "<Figure>"}
    return nbformat.v4.new_output("display_data", data=data)


def figure_cell(picture: np.ndarray, tags=()) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("plt.show()", metadata={"tags": list(tags)})
    cell.outputs = [png_output(picture)]
    return cell


def curve(offset: int = 0) -> np.ndarray:
    """A white 100 x 200 figure with a blue anti-aliased line across it."""
    picture = np.full((100, 200, 3), 255.0)
    rows = (50 + offset + 20 * np.sin(np.arange(200) / 30)).astype(int)
    picture[rows, np.arange(200)] = (30, 90, 200)
    picture[rows + 1, np.arange(200)] = (140, 170, 230)
    return picture


def test_the_same_figure_passes_and_float_noise_is_tolerated():
    noisy = curve()
    rng = np.random.default_rng(0)
    where = rng.choice(noisy.size, 300, replace=False)  # about what another CPU changed
    noisy.flat[where] = np.clip(noisy.flat[where] + rng.integers(-6, 7, 300), 0, 255)
    assert nc.figure_problems([figure_cell(curve())], [figure_cell(curve())], "a") == (1, [])
    assert nc.figure_problems([figure_cell(curve())], [figure_cell(noisy)], "a") == (1, [])


def test_a_moved_curve_a_new_background_and_a_new_size_are_reported():
    stored = [figure_cell(curve())]
    compared, problems = nc.figure_problems(stored, [figure_cell(curve(offset=5))], "a")
    assert compared == 1 and problems[0].startswith("a cell 0 figure 1: differs from the stored")
    red = curve()
    red[(red == 255).all(axis=2)] = (255, 0, 0)
    assert "differs" in nc.figure_problems(stored, [figure_cell(red)], "a")[1][0]
    _, problems = nc.figure_problems(stored, [figure_cell(curve()[:90])], "a")
    assert problems == ["a cell 0 figure 1: size (100, 200) stored, (90, 200) drawn"]


def test_a_missing_figure_is_reported_and_ignored_cells_are_not_compared():
    empty = nbformat.v4.new_code_cell("plt.show()")
    _, problems = nc.figure_problems([figure_cell(curve())], [empty], "a")
    assert problems == ["a cell 0: 1 figures stored, 0 drawn"]
    timing = [figure_cell(curve(), tags=["nbval-ignore-output"])]
    assert nc.figure_problems(timing, [figure_cell(curve(offset=9))], "a") == (0, [])


def test_grading_problems_need_full_marks_for_solutions_and_zero_for_the_student_copy():
    assert nc.grading_problems({"solved": [(1, 1), (1, 1)], "student": [(0, 1), (0, 1)]}) == []
    # each failing case reports exactly what is wrong, and nothing else
    assert nc.grading_problems({"solved": [(1, 1), (0, 1)], "student": [(0, 1), (0, 1)]}) == [
        "the solved notebook did not get full marks: [(1, 1), (0, 1)]"
    ]
    assert nc.grading_problems({"solved": [(1, 1), (0, 0)], "student": [(0, 1), (0, 0)]}) == [
        "the solved notebook did not get full marks: [(1, 1), (0, 0)]"  # a cell worth nothing
    ]
    assert nc.grading_problems({"solved": [(1, 1), (1, 1)], "student": [(0, 1), (1, 1)]}) == [
        "the student copy did not get zero: [(0, 1), (1, 1)]"
    ]
    assert nc.grading_problems({"solved": [(1, 1)], "student": [(0, 1)]}) == [
        "nbgrader found 1 graded cells, expected >= 2"
    ]
    assert nc.grading_problems({"solved": [(0, 1)], "student": [(1, 1)]}) == [
        "nbgrader found 1 graded cells, expected >= 2",
        "the solved notebook did not get full marks: [(0, 1)]",
        "the student copy did not get zero: [(1, 1)]",
    ]


def test_outputs_go_to_the_released_notebook_only_where_the_cells_match():
    cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("print(x)")]
    solution = nbformat.v4.new_code_cell("# YOUR CODE HERE")
    solution.metadata["nbgrader"] = {"solution": True}
    released = nbformat.v4.new_notebook(cells=[cells[0], solution, cells[1]])
    student = nbformat.v4.new_notebook(cells=[c.copy() for c in cells])
    student.cells[1].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    graded = nc.transplant(released, student)
    assert [c.outputs for c in graded.cells] == [[], [], student.cells[1].outputs]
    student.cells[1].source = "print(x + 1)"
    with pytest.raises(ValueError, match="released and student copies differ"):
        nc.transplant(released, student)


def exercise_notebook(path: Path, exercises: int = 2) -> Path:
    """A notebook with ``exercises`` exercises (stub, solution, check), written to ``path``."""
    cells = [nbformat.v4.new_code_cell("x = 1")]
    for n in range(1, exercises + 1):
        cells += [
            nbformat.v4.new_code_cell(f"answer_{n} = None"),
            nbformat.v4.new_code_cell(f"answer_{n} = {n}", metadata={"tags": ["solution"]}),
            nbformat.v4.new_code_cell(
                f'assert answer_{n} == {n}, "Exercise {n} is not solved yet: answer_{n}"',
                metadata={"tags": ["check"]},
            ),
        ]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def run_of_student_copy(
    path: Path, failing_checks=(1, 2), other_errors=()
) -> nbformat.NotebookNode:
    """The student copy of ``path`` as if executed: the given check cells failed as they
    should, and the code cells at the indexes ``other_errors`` raised a ValueError."""
    nb = nc.classroom.student_copy(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    checks = [c for c in code if "check" in nc.tags(c)]
    for n in failing_checks:
        message = f"Exercise {n} is not solved yet: answer_{n}"
        checks[n - 1].outputs = [
            nbformat.v4.new_output("error", ename="AssertionError", evalue=message, traceback=[])
        ]
    for index in other_errors:
        code[index].outputs = [
            nbformat.v4.new_output("error", ename="ValueError", evalue="bad: value", traceback=[])
        ]
    return nb


def test_a_student_copy_that_fails_only_in_its_checks_passes(tmp_path):
    path = exercise_notebook(tmp_path / "01_exercises.ipynb")
    assert nc.student_copy_problems(path, run_of_student_copy(path)) == []


def test_a_check_that_passes_on_the_stub_or_another_error_is_reported(tmp_path):
    path = exercise_notebook(tmp_path / "01_exercises.ipynb")
    expected = [
        (["check"], "AssertionError", "Exercise 1 is not solved yet"),
        (["check"], "AssertionError", "Exercise 2 is not solved yet"),
    ]
    passing = run_of_student_copy(path, failing_checks=(1,))  # check 2 passes on its stub
    assert nc.student_copy_problems(path, passing) == [
        f"errors {expected[:1]}, expected exactly {expected}"
    ]
    broken = run_of_student_copy(path, other_errors=(0,))  # the first cell raised
    assert nc.student_copy_problems(path, broken) == [
        f"errors {[([], 'ValueError', 'bad'), *expected]}, expected exactly {expected}"
    ]


def test_a_notebook_with_one_exercise_is_reported(tmp_path):
    path = exercise_notebook(tmp_path / "01_exercises.ipynb", exercises=1)
    assert nc.student_copy_problems(path, run_of_student_copy(path, failing_checks=(1,))) == [
        "1 check cells for 1 solutions (need >= 2)"
    ]
