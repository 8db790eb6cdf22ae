"""The checks that share one execution of each notebook (wired in by the top-level conftest.py).

`make test` executes every notebook twice, and only twice:

* as committed, by nbval, which compares every text output with the stored one;
* as its student copy (scripts/classroom.py: no Solutions section), in a kernel of our own.

Every other notebook check reuses those two runs instead of executing again:

* figures: every stored PNG of a cell not tagged ``nbval-ignore-output`` must match what
  nbval's run drew, within ``FIGURE_RMS_TOLERANCE`` (see there for why a tolerance);
* student copy: it has no solutions, and runs top to bottom failing only in its check
  cells, each with its own exercise's message;
* grading: nbgrader, with execution switched off, grades nbval's run full marks (each check
  with the outputs of its call after the solution) and the student run zero, for every
  notebook;
* probes: after the student copy has run, its kernel draws a figure again with one thing
  changed (``PROBES``), which the figure check must report. This proves the check can fail
  without executing a notebook a third time.
"""

from __future__ import annotations

import copy
import functools
import io
import sys
import warnings
from base64 import b64decode
from dataclasses import dataclass
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import classroom  # noqa: E402  (a script, not a package)

# Root-mean-square difference of the 0-255 RGB values of a stored and a new figure.
# TensorFlow's float kernels differ between CPUs (oneDNN and Eigen pick them by instruction
# set), so a learning curve drawn on another CPU is moved by a fraction of a pixel. Measured
# on notebook 13's learning curves: 0.11 between this machine's default kernels and
# ONEDNN_MAX_CPU_ISA=SSE41 (2,506 values differ, by 6 at most). What a figure shows, changed,
# is far above it: notebook 13's accuracy curves moved by 5% of their axis, or notebook 01's
# first figure on a red background (the PROBES below; tests/test_notebook_checks.py).
FIGURE_RMS_TOLERANCE = 1.0


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


# ---------------------------------------------------------------- figures


def pixels(output) -> np.ndarray:
    """The RGB values of a PNG output, as floats."""
    data = b64decode(output["data"]["image/png"])
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.float64)


def rms_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a - b) ** 2)))


def figure_problems(stored_cells, executed_cells, name: str) -> tuple[int, list[str]]:
    """Compare the PNG outputs of the same cells in two runs; return (figures compared, problems).

    Cells tagged ``nbval-ignore-output`` (timings) are skipped. A figure of another size, or
    one whose RMS difference is over ``FIGURE_RMS_TOLERANCE``, is a problem.
    """
    compared, problems = 0, []
    for number, (before, after) in enumerate(zip(stored_cells, executed_cells, strict=True)):
        if before.cell_type != "code" or "nbval-ignore-output" in tags(before):
            continue
        old = [o for o in before.outputs if "image/png" in o.get("data", {})]
        new = [o for o in after.outputs if "image/png" in o.get("data", {})]
        if len(old) != len(new):
            problems.append(f"{name} cell {number}: {len(old)} figures stored, {len(new)} drawn")
            continue
        for figure, (a, b) in enumerate(
            zip(map(pixels, old), map(pixels, new), strict=True), start=1
        ):
            where = f"{name} cell {number} figure {figure}"
            compared += 1
            if a.shape != b.shape:
                problems.append(f"{where}: size {a.shape[:2]} stored, {b.shape[:2]} drawn")
            elif (rms := rms_difference(a, b)) > FIGURE_RMS_TOLERANCE:
                problems.append(
                    f"{where}: differs from the stored figure "
                    f"(RMS {rms:.2f} > {FIGURE_RMS_TOLERANCE} of 255)"
                )
    return compared, problems


def png_outputs(nb, ignored: bool) -> int:
    """How many PNG outputs the cells (not) tagged ``nbval-ignore-output`` hold."""
    return sum(
        "image/png" in o.get("data", {})
        for c in nb.cells
        if c.cell_type == "code" and ("nbval-ignore-output" in tags(c)) == ignored
        for o in c.outputs
    )


# ---------------------------------------------------------------- executing


@dataclass(frozen=True)
class Probe:
    """A figure cell drawn again after the student copy ran, with ``change`` run first.

    The cell is the first code cell whose source contains ``marker``. Before the changed
    drawing, the cell is drawn again unchanged: that one must match the stored figure.
    """

    marker: str
    change: str
    what: str


PROBES = {
    "01_roundtrip_raw_bytes": Probe(
        marker="cat = voc.load_image(SAMPLE, CAT_ID)",
        change="plt.rcParams['axes.facecolor'] = plt.rcParams['figure.facecolor'] = 'red'",
        what="the first figure on a red background",
    ),
    "13_train_from_tfrecords": Probe(
        marker='ax.plot(epochs, history[metric], "o-", label="training")',
        change=(
            "_low, _high = right.get_ylim()\n"
            "history = {key: [value + 0.05 * (_high - _low) for value in values]\n"
            "           if key.endswith('accuracy') else values for key, values in history.items()}"
        ),
        what="the accuracy curves moved up by 5% of their axis",
    ),
}


@dataclass
class ProbeRun:
    probe: Probe
    stored: nbformat.NotebookNode  # the stored cell
    unchanged: nbformat.NotebookNode  # drawn again as it is
    changed: nbformat.NotebookNode  # drawn with the change


def execute(nb, folder: Path, probe: Probe | None = None) -> ProbeRun | None:
    """Execute ``nb`` in place in a fresh kernel (working folder ``folder``); then the probe."""
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    client.reset_execution_trackers()
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
        if probe is None:
            return None
        stored = next(c for c in nb.cells if c.cell_type == "code" and probe.marker in c.source)
        runs = []
        for source in (stored.source, probe.change + "\n" + stored.source):
            nb.cells.append(nbformat.v4.new_code_cell(source))  # nbclient writes it back there
            client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
            runs.append(nb.cells.pop())
    return ProbeRun(probe, stored, *runs)


def run_student_copy(path: Path, folder: Path) -> tuple[nbformat.NotebookNode, ProbeRun | None]:
    """The student copy of ``path``, executed in ``folder``, and its probe run if it has one."""
    nb = classroom.student_copy(path)
    probe_run = execute(nb, folder, PROBES.get(path.stem))
    if probe_run is not None:  # the stored figure, not the one this run drew
        stored = classroom.student_copy(path).cells
        probe_run.stored = next(c for c in stored if c.source == probe_run.stored.source)
    return nb, probe_run


def run_as_committed(path: Path, folder: Path) -> nbformat.NotebookNode:
    """``path`` executed as committed: used when nbval's run of it is not available."""
    nb = nbformat.read(path, as_version=4)
    execute(nb, folder)
    return nb


def with_outputs(path: Path, cells_outputs: list[list]) -> nbformat.NotebookNode:
    """The notebook at ``path`` with its code cells' outputs replaced, in order."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if len(code) != len(cells_outputs):
        raise ValueError(f"{path.name}: {len(code)} code cells, {len(cells_outputs)} outputs")
    for cell, outputs in zip(code, cells_outputs, strict=True):
        cell.outputs = [nbformat.from_dict(copy.deepcopy(dict(o))) for o in outputs]
    return nb


# ---------------------------------------------------------------- the student copy


def student_copy_problems(path: Path, executed) -> list[str]:
    """What is wrong with the executed student copy of ``path`` (empty if nothing)."""
    original = nbformat.read(path, as_version=4)
    solutions = [c.source for c in original.cells if "solution" in tags(c)]
    student = classroom.student_copy(path)
    problems = []
    if [c for c in student.cells if {"solution", "solution-check"} & set(tags(c))]:
        problems.append("a cell tagged solution or solution-check is left in the student copy")
    sources = [c.source for c in student.cells]
    if [s for s in solutions if s in sources]:
        problems.append("solution code is left in the student copy")
    checks = [c for c in student.cells if "check" in tags(c)]
    if not len(checks) == len(solutions) >= 2:
        problems.append(f"{len(checks)} check cells for {len(solutions)} solutions (need >= 2)")
    if any(c.outputs for c in checks):
        problems.append("check cells must have their outputs cleared")
    failures = [  # a demonstration tagged raises-exception may raise; a check must
        ("check" in tags(cell), output.ename, output.evalue.split(":")[0])
        for cell in executed.cells
        if cell.cell_type == "code"
        and ("check" in tags(cell) or "raises-exception" not in tags(cell))
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]
    expected = [
        (True, "AssertionError", f"Exercise {n} is not solved yet")
        for n in range(1, len(checks) + 1)
    ]
    if failures != expected:
        problems.append(f"errors (in a check?, name, message) {failures}, expected {expected}")
    return problems


# ---------------------------------------------------------------- grading with nbgrader

# Grade the outputs a run already made: nbgrader's autograde, minus its ClearOutput and
# Execute steps (everything else it does, it does as in a classroom).
GRADE_WITHOUT_EXECUTING = """
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, DeduplicateIds,
    IgnorePattern, LimitOutput, OverwriteCells, OverwriteKernelspec, SaveAutoGrades)
c.Autograde.sanitize_preprocessors = [DeduplicateIds, OverwriteKernelspec, OverwriteCells,
                                      CheckCellMetadata]
c.Autograde.autograde_preprocessors = [IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
"""


def transplant(released, student) -> nbformat.NotebookNode:
    """The released notebook with the outputs of the executed student copy.

    The released notebook is the student copy without its note in place of the Solutions,
    plus one solution cell per exercise that holds only a comment (nbgrader's code stub):
    running it prints nothing, so it gets no outputs.
    """
    released = copy.deepcopy(released)
    rest = iter([c for c in student.cells if c.source != classroom.STUDENT_NOTE])
    for cell in released.cells:
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            continue
        ran = next(rest)
        if ran.cell_type != cell.cell_type or ran.source != cell.source:
            raise ValueError(f"released and student copies differ at {cell.source[:60]!r}")
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = ran.outputs, ran.execution_count
    return released


def solved_submission(source, solved) -> nbformat.NotebookNode:
    """The nbgrader source notebook with the outputs of the run of the notebook as committed.

    Cells are matched by id. A check gets the outputs of its exercise's solution-check (the
    same ``check_exercise_N()``, called after the solution ran), not those of its first call
    on the stub.
    """
    outputs = {cell.id: cell for cell in solved.cells if cell.cell_type == "code"}
    for exercise in classroom.exercises(solved):
        outputs[solved.cells[exercise.check].id] = solved.cells[exercise.solution_check]
    submission = copy.deepcopy(source)
    for cell in submission.cells:
        if cell.cell_type == "code":
            ran = outputs[cell.id]
            cell.outputs, cell.execution_count = ran.outputs, ran.execution_count
    return submission


def grade(path: Path, solved, student, course: Path) -> dict[str, list[tuple[float, float]]]:
    """nbgrader's (score, max score) of every graded cell, for the two runs of ``path``.

    ``solved`` is the notebook as committed, executed; ``student`` its executed student
    copy. A course folder is made in ``course`` from `make assignments`' configuration.
    """
    import nbgrader.api
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    # Every new gradebook asks `alembic heads` in a new process (3 s), though the answer is a
    # constant of the installed nbgrader: ask alembic here instead, once per test process.
    nbgrader.api.get_alembic_version = _alembic_head

    name = path.stem
    (course / "source" / name).mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(classroom.NBGRADER_CONFIG + GRADE_WITHOUT_EXECUTING)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    source = classroom.assignment_source(path)
    nbformat.write(source, course / "source" / name / path.name)
    solved_source = solved_submission(source, solved)

    api = NbGraderAPI(config=config)
    with warnings.catch_warnings():  # nbgrader's own use of SQLAlchemy warns; nothing to do here
        warnings.simplefilter("ignore")
        _succeed("generate_assignment", api.generate_assignment(name, force=True))
        released = nbformat.read(course / "release" / name / path.name, as_version=4)
        submissions = {"solved": solved_source, "student": transplant(released, student)}
        for student_id, nb in submissions.items():
            (course / "submitted" / student_id / name).mkdir(parents=True)
            nbformat.write(nb, course / "submitted" / student_id / name / path.name)
            _succeed("autograde", api.autograde(name, student_id))
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
            return {
                student_id: [
                    (g.score, g.max_score)
                    for notebook in gradebook.find_submission(name, student_id).notebooks
                    for g in notebook.grades
                ]
                for student_id in submissions
            }


@functools.cache
def _alembic_head() -> str:
    """What ``nbgrader.api.get_alembic_version`` runs `alembic heads` for, asked in-process."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import _temp_alembic_ini

    with _temp_alembic_ini("sqlite://") as ini:
        return ScriptDirectory.from_config(Config(ini)).get_current_head()


def _succeed(step: str, result: dict) -> None:
    if not result["success"]:
        raise RuntimeError(f"nbgrader {step} failed: {result['error']}\n{result['log']}")


def grading_problems(scores: dict[str, list[tuple[float, float]]]) -> list[str]:
    problems = []
    if len(scores["solved"]) < 2:
        problems.append(f"nbgrader found {len(scores['solved'])} graded cells, expected >= 2")
    if not all(score == maximum > 0 for score, maximum in scores["solved"]):
        problems.append(f"the solved notebook did not get full marks: {scores['solved']}")
    if not all(score == 0 for score, _ in scores["student"]):
        problems.append(f"the student copy did not get zero: {scores['student']}")
    return problems


# ---------------------------------------------------------------- the checks, as pytest runs them
# Each takes nbval's collector of one notebook and pytest's ``tmp_path_factory`` for its
# folders (conftest.py adds them after the notebook's cells).

_RUNS: dict[Path, dict] = {}  # per notebook: its two runs, collected or made once


def solved_run(notebook, folders: pytest.TempPathFactory) -> nbformat.NotebookNode:
    """nbval's run of the notebook, or (if nbval did not run every cell) a run of our own."""
    path, runs = Path(notebook.path), _RUNS.setdefault(Path(notebook.path), {})
    if "solved" not in runs:
        outputs = [
            i.test_outputs
            for i in notebook.session.items
            if i.parent is notebook and hasattr(i, "cell")
        ]
        code_cells = sum(c.cell_type == "code" for c in notebook.nb.cells)
        if len(outputs) == code_cells and all(o is not None for o in outputs):
            runs["solved"] = with_outputs(path, outputs)
        else:
            runs["solved"] = run_as_committed(path, folders.mktemp(f"{path.stem}-solved"))
    return runs["solved"]


def student_run(
    notebook, folders: pytest.TempPathFactory
) -> tuple[nbformat.NotebookNode, ProbeRun | None]:
    path, runs = Path(notebook.path), _RUNS.setdefault(Path(notebook.path), {})
    if "student" not in runs:
        runs["student"] = run_student_copy(path, folders.mktemp(f"{path.stem}-student"))
    return runs["student"]


def check_student_copy(notebook, folders: pytest.TempPathFactory) -> None:
    path = Path(notebook.path)
    problems = student_copy_problems(path, student_run(notebook, folders)[0])
    assert not problems, f"{path.name} student copy: {problems}"


def check_figures(notebook, folders: pytest.TempPathFactory) -> None:
    path = Path(notebook.path)
    stored = nbformat.read(path, as_version=4)
    compared, problems = figure_problems(
        stored.cells, solved_run(notebook, folders).cells, path.name
    )
    assert not problems, f"{problems}: run make notebooks"
    assert compared == png_outputs(stored, ignored=False)


def check_probe(notebook, folders: pytest.TempPathFactory) -> None:
    path, run = Path(notebook.path), student_run(notebook, folders)[1]
    _, same = figure_problems([run.stored], [run.unchanged], path.name)
    assert same == [], f"drawn again unchanged, the figure should match: {same}"
    compared, changed = figure_problems([run.stored], [run.changed], path.name)
    assert compared >= 1 and changed and "differs from the stored figure" in changed[0], (
        f"{run.probe.what}: the figure check did not notice ({changed})"
    )


def check_grading(notebook, folders: pytest.TempPathFactory) -> None:
    path = Path(notebook.path)
    course = folders.mktemp(f"{path.stem}-course")
    scores = grade(path, solved_run(notebook, folders), student_run(notebook, folders)[0], course)
    problems = grading_problems(scores)
    assert not problems, f"{path.name}: {problems}"


#: (name, check, whether it compares stored outputs: left out under --nbval-lax)
CHECKS = [
    ("student copy fails only in its checks", check_student_copy, False),
    ("figures match the stored ones", check_figures, True),
    ("nbgrader grades solutions full and the student copy zero", check_grading, False),
]
