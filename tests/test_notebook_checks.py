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
    link = nbformat.v4.new_markdown_cell("Next: [02](02_next.ipynb)")
    released = nbformat.v4.new_notebook(cells=[cells[0], solution, cells[1], link])
    note = nbformat.v4.new_markdown_cell(nc.classroom.STUDENT_NOTE)  # not in the released one
    student = nbformat.v4.new_notebook(cells=[c.copy() for c in cells] + [note, link])
    student.cells[1].outputs = [nbformat.v4.new_output("stream", text="1\n")]
    graded = nc.transplant(released, student)
    assert [c.get("outputs") for c in graded.cells] == [[], [], student.cells[1].outputs, None]
    student.cells[1].source = "print(x + 1)"
    with pytest.raises(ValueError, match="released and student copies differ"):
        nc.transplant(released, student)


def exercise_notebook(path: Path, exercises: int = 2) -> Path:
    """A notebook with ``exercises`` exercises laid out as scripts/classroom.py says (stub and
    check under Exercises; solution and solution-check under Solutions), written to ``path``."""
    markdown, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [code("x = 1"), markdown("## Exercises")]
    for n in range(1, exercises + 1):
        check = (
            f"def check_exercise_{n}():\n"
            f'    assert answer_{n} == {n}, "Exercise {n} is not solved yet: answer_{n}"\n\n\n'
            f"check_exercise_{n}()"
        )
        cells += [
            markdown(f"**{n}.** Set `answer_{n}`."),
            code(f"answer_{n} = None"),
            code(check, metadata={"tags": ["check", "raises-exception"]}),
        ]
    cells += [markdown("## Key points"), markdown("## Solutions")]
    for n in range(1, exercises + 1):
        cells += [
            markdown(f"**Exercise {n}.**"),
            code(f"answer_{n} = {n}", metadata={"tags": ["solution"]}),
            code(f"check_exercise_{n}()", metadata={"tags": ["solution-check"]}),
        ]
    cells.append(markdown("Next: [02](02_next.ipynb)"))
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def error(ename: str, evalue: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[])


def run_of_student_copy(
    path: Path, failing_checks=(1, 2), other_errors=()
) -> nbformat.NotebookNode:
    """The student copy of ``path`` as if executed: the given check cells failed as they
    should, and the code cells at the indexes ``other_errors`` raised a ValueError."""
    nb = nc.classroom.student_copy(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    checks = [c for c in code if "check" in nc.tags(c)]
    for n in failing_checks:
        checks[n - 1].outputs = [error("AssertionError", f"Exercise {n} is not solved yet: a_{n}")]
    for index in other_errors:
        code[index].outputs = [error("ValueError", "bad: value")]
    return nb


def test_a_student_copy_has_no_solutions_and_no_outputs_of_stubs_and_checks(tmp_path):
    path = exercise_notebook(tmp_path / "01_exercises.ipynb")
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", text="ran\n")]
    nbformat.write(nb, path)
    student = nc.classroom.student_copy(path)
    assert [c.source for c in student.cells[-2:]] == [
        nc.classroom.STUDENT_NOTE,
        "Next: [02](02_next.ipynb)",
    ]
    assert not [
        c for c in student.cells if c.source.startswith("answer_") and "= None" not in c.source
    ]
    outputs = [bool(c.outputs) for c in student.cells if c.cell_type == "code"]
    assert outputs == [True, False, False, False, False]  # only the first cell keeps its output


def test_the_nbgrader_source_puts_each_solution_between_its_stub_and_its_check(tmp_path):
    path = exercise_notebook(tmp_path / "01_exercises.ipynb")
    source = nc.classroom.assignment_source(path)
    code = [c for c in source.cells if c.cell_type == "code"]
    assert [c.source.splitlines()[0] for c in code] == [
        "x = 1",
        "answer_1 = None",
        "### BEGIN SOLUTION",
        "def check_exercise_1():",
        "answer_2 = None",
        "### BEGIN SOLUTION",
        "def check_exercise_2():",
    ]
    grading = [c.metadata.get("nbgrader", {}).get("grade_id") for c in code]
    assert grading == [None, None, "exercise-1-solution", "exercise-1-check"] + [
        None,
        "exercise-2-solution",
        "exercise-2-check",
    ]
    assert "## Solutions" not in "".join(c.source for c in source.cells)


def test_a_solved_submission_gives_each_check_the_outputs_of_its_call_after_the_solution(tmp_path):
    path = exercise_notebook(tmp_path / "01_exercises.ipynb")
    ran = nbformat.read(path, as_version=4)
    for exercise in nc.classroom.exercises(ran):
        ran.cells[exercise.check].outputs = [error("AssertionError", "not solved yet")]
        ran.cells[exercise.solution_check].outputs = [
            nbformat.v4.new_output("stream", text=f"exercise {exercise.number} solved\n")
        ]
    submission = nc.solved_submission(nc.classroom.assignment_source(path), ran)
    graded = [c for c in submission.cells if "nbgrader" in c.metadata and c.metadata.nbgrader.grade]
    assert [c.outputs[0].text for c in graded] == ["exercise 1 solved\n", "exercise 2 solved\n"]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda cells: cells[4].metadata.update(tags=["check"]), "tagged raises-exception"),
        (lambda cells: cells[3].metadata.update(tags=["note"]), "follow an untagged stub"),
        (lambda cells: cells[-6].metadata.update(tags=[]), "is not tagged solution"),
        (lambda cells: setattr(cells[-5], "source", "check_exercise_2()"), "check_exercise_1"),
        (lambda cells: cells.pop(-5), "2 checks under Exercises, 3 code cells under Solutions"),
    ],
)
def test_an_exercise_out_of_its_layout_is_refused(tmp_path, change, message):
    nb = nbformat.read(exercise_notebook(tmp_path / "01_exercises.ipynb"), as_version=4)
    change(nb.cells)
    with pytest.raises(ValueError, match=message):
        nc.classroom.exercises(nb)


def test_a_student_copy_that_fails_only_in_its_checks_passes(tmp_path):
    path = exercise_notebook(tmp_path / "01_exercises.ipynb")
    assert nc.student_copy_problems(path, run_of_student_copy(path)) == []
    nb = nbformat.read(path, as_version=4)  # a demonstration of an error, tagged as such
    nb.cells[0].metadata["tags"] = ["raises-exception"]
    nbformat.write(nb, path)
    assert nc.student_copy_problems(path, run_of_student_copy(path, other_errors=(0,))) == []


def test_a_check_that_passes_on_the_stub_or_another_error_is_reported(tmp_path):
    path = exercise_notebook(tmp_path / "01_exercises.ipynb")
    expected = [
        (True, "AssertionError", "Exercise 1 is not solved yet"),
        (True, "AssertionError", "Exercise 2 is not solved yet"),
    ]
    passing = run_of_student_copy(path, failing_checks=(1,))  # check 2 passes on its stub
    assert nc.student_copy_problems(path, passing) == [
        f"errors (in a check?, name, message) {expected[:1]}, expected {expected}"
    ]
    broken = run_of_student_copy(path, other_errors=(0,))  # the first cell raised
    assert nc.student_copy_problems(path, broken) == [
        f"errors (in a check?, name, message) {[(False, 'ValueError', 'bad'), *expected]}, "
        f"expected {expected}"
    ]


def test_a_notebook_with_one_exercise_is_reported(tmp_path):
    path = exercise_notebook(tmp_path / "01_exercises.ipynb", exercises=1)
    assert nc.student_copy_problems(path, run_of_student_copy(path, failing_checks=(1,))) == [
        "1 check cells for 1 solutions (need >= 2)"
    ]
