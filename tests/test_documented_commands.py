"""Every shell command in README.md and CONTRIBUTING.md is run here, or says why not.

Documentation is checked like notebook outputs: a documented command that does not
do what it says is a defect. A command that cannot run inside the test suite (it
starts a server, or is the test suite itself) is listed in NOT_RUN with the reason,
so a new command cannot slip through untested.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]

NOT_RUN = {
    "make lab": "starts a JupyterLab server and waits for a browser",
    "VOC_ROOT=/path/to/VOCdevkit/VOC2012 make lab": "needs a VOC2012 download and starts a server",
    "make test": "is this test suite (CI runs it through .ci/run)",
    "make stability": "runs the notebook checks three times (minutes); CI runs them once",
    "make notebooks": "rewrites every notebook in place; the same script is run below on a copy",
    "make bench": "takes minutes and measures time, which tests never do",
    "python -m benchmarks beam": "takes minutes and measures time, which tests never do",
    "python -m benchmarks records": "takes minutes and measures time, which tests never do",
    "python -m benchmarks pipeline": "takes minutes and measures time, which tests never do",
    "python -m benchmarks suite": "runs this test suite three times and measures time",
    "python -m benchmarks --reference shuffle": "runs the shootout for about an hour and rewrites "
    "the committed reference; tests/test_benchmark_reference.py checks the result it records",
    "python -m benchmarks --reference pipeline": "measures time for about five minutes and "
    "rewrites the committed reference; tests/test_benchmark_reference.py checks what it records",
    "make bench-scale": "writes 22 GB and reads it from a cold page cache for hours; "
    "tests/test_benchmark_reference.py checks the result it records",
    "python -m benchmarks.reference": "prints the tables of the committed reference results; "
    "tests/test_benchmark_reference.py checks that the README holds them exactly",
    "make mutation": "runs the helper tests once per mutant, for hours; not part of make test; "
    "it writes tests/mutation_score.json, committed after each run",
    "make mutation MODULE=records": "the same for one module (minutes to an hour)",
    "make flaky": "runs this test suite twenty times",
    "make flaky N=20": "runs this test suite twenty times",
    "make test NBVAL=--nbval-lax": "is this test suite without comparing stored outputs; "
    "make test runs the same tests and compares them",
    "make sample": "rewrites helpers/sample_data; tests/test_voc_sample.py checks the sample",
    "make lock": "re-resolves against the package registry and rewrites requirements.lock; "
    "tests/test_environment.py checks that the lock agrees with the pins",
    "conda env create -f environment.yml": "conda is not part of this environment; "
    "tests/test_environment.py checks environment.yml against the pins",
    "conda activate tfrecord-tutorials": "conda (see above)",
    "jupyter lab notebooks/": "starts a JupyterLab server",
    ".venv/bin/python -m pytest tests/test_records.py -n 0": "runs one test file of this suite",
    "python -m pytest": "is this test suite, as conda users run it (make test runs it after lint)",
    "python -m http.server -d build/html 8000": "starts a web server; tests/test_docs_site.py "
    "serves the site on localhost itself and opens every page in Chromium",
}


def documented_commands() -> list[str]:
    """Lines of ```bash blocks, and inline `make ...`/`python ...` commands, comments dropped."""
    commands = []
    for doc in DOCS:
        text = doc.read_text()
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.splitlines():
                line = line.split("  #")[0].split(" # ")[0].strip()
                if line:
                    commands.append(line)
        for span in re.findall(r"`((?:make|python|\.venv/bin/python) [^`]+)`", text):
            commands.append(" ".join(span.split()))
    return list(dict.fromkeys(commands))


def run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    command = re.sub(r"^python ", f"{sys.executable} ", command)
    return subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=900)


def test_every_documented_command_is_run_or_says_why_not():
    tested = {
        "make lint",
        "make student",
        "make assignments",
        "make docs",  # tests/test_docs_site.py builds the site with it, once
        "python scripts/run_notebooks.py notebooks/NN_*.ipynb",
        "python scripts/run_notebooks.py --no-save notebooks/*.ipynb",  # on small notebooks
        "python -m helpers COMMAND --help",  # tests/test_cli.py: --help of every command
        "python -m helpers index",  # notebook 17's row; index_recipe() runs it on shards
    }
    tested |= set(command_line_recipe()) | set(scale_and_boxes_recipe()) | set(index_recipe())
    tested |= set(prose_recipe())
    unclassified = [c for c in documented_commands() if c not in NOT_RUN and c not in tested]
    assert not unclassified, f"documented but neither tested nor listed in NOT_RUN: {unclassified}"


def recipe(first: str, length: int) -> list[str]:
    """``length`` documented commands in a row, from the first one that contains ``first``."""
    commands = documented_commands()
    start = next(i for i, c in enumerate(commands) if first in c)
    return commands[start : start + length]


def command_line_recipe() -> list[str]:
    """README's first recipe: convert the sample, verify the shards, inspect one."""
    return recipe("--encoding encoded", 3)


def scale_and_boxes_recipe() -> list[str]:
    """README's second recipe: the ```bash block that starts with --shuffle-seed."""
    return recipe("--shuffle-seed", 5)


def test_readme_command_line_recipe_works_as_described(tmp_path):
    steps = command_line_recipe()
    assert [c.split()[3] for c in steps] == ["convert-voc", "verify", "inspect"]
    done = run(steps[0], tmp_path)
    assert done.returncode == 0, done.stderr
    shards = sorted(p.name for p in (tmp_path / "data").iterdir())
    assert shards == [f"voc-train-0000{i}-of-00004.tfrecord" for i in range(4)]
    done = run(steps[1], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "4 of 4 files intact"
    done = run(steps[2], tmp_path)
    assert done.returncode == 0 and "tf.train.Example" in done.stdout, done.stderr
    # "exit 1 and one line per damaged file, naming its first bad record"
    damaged = tmp_path / "data" / shards[1]
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    done = run(steps[1], tmp_path)
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1 and re.search(r"record \d+ at byte \d+", done.stderr)


def index_recipe() -> list[str]:
    """README's index recipe: index the shards, then check them."""
    return recipe("python -m helpers index data/", 2)


def test_readme_index_recipe_works_as_described(tmp_path):
    """Both index files beside each shard, in tfrecord2idx's text format; --check passes,
    then names the one shard that changed; a GZIP file is refused by name."""
    from helpers.records import write_records

    index, check = index_recipe()
    assert index.split()[3:] == ["index", "data/voc-train-*.tfrecord"]
    assert check.split()[3:] == ["index", "--check", "data/voc-train-*.tfrecord"]
    (tmp_path / "data").mkdir()
    shards = [tmp_path / "data" / f"voc-train-0000{k}-of-00002.tfrecord" for k in range(2)]
    for k, shard in enumerate(shards):
        write_records(shard, [bytes(10 + k + j) for j in range(5)])
    done = run(index, tmp_path)
    assert done.returncode == 0, done.stderr
    for k, shard in enumerate(shards):
        lines = Path(f"{shard}.index").read_text().splitlines()
        lengths = [10 + k + j + 16 for j in range(5)]  # payload + 16 bytes of framing
        starts = [sum(lengths[:j]) for j in range(5)]
        assert lines == [f"{s} {n}" for s, n in zip(starts, lengths, strict=True)]
        assert Path(f"{shard}.index.npy").is_file()
    done = run(check, tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    written = {p: p.read_bytes() for p in (tmp_path / "data").iterdir()}
    with shards[1].open("ab") as grown:
        grown.write(b"x")
    done = run(check, tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0].startswith(f"data/{shards[1].name}: "), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert shards[0].name not in done.stderr
    for path, data in written.items():  # --check wrote nothing
        if path != shards[1]:
            assert path.read_bytes() == data, path
    write_records(tmp_path / "data" / "voc-train.tfrecord.gz", [b"abc"], compression="GZIP")
    done = run("python -m helpers index data/voc-train.tfrecord.gz", tmp_path)
    assert done.returncode == 1 and "data/voc-train.tfrecord.gz: a GZIP" in done.stderr
    assert not list((tmp_path / "data").glob("voc-train.tfrecord.gz.index*"))


def prose_recipe() -> list[str]:
    """CONTRIBUTING's prose table: every notebook, then one with its longest sentences."""
    return recipe("python scripts/prose.py", 2)


def test_contributing_prose_recipe_prints_the_table_it_describes():
    """A row per notebook and the total; with --long 5, the notebook's 5 longest sentences."""
    every, longest = prose_recipe()
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    done = run(every, ROOT)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    rows = [line.split()[0] for line in done.stdout.splitlines()]
    assert rows == ["notebook", *notebooks, "total"]
    done = run(longest, ROOT)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = done.stdout.splitlines()
    name = next(n for n in notebooks if n.startswith("03_"))
    assert [line.split()[0] for line in lines[:3]] == ["notebook", name, "total"]
    assert lines[4] == f"{name}: the 5 longest sentences"
    counts = [int(line.split()[0]) for line in lines[5:]]
    assert len(counts) == 5 and counts == sorted(counts, reverse=True), lines


def test_readme_shuffle_beam_and_detection_recipe_works_as_described(tmp_path):
    """Same seed, two engines, the same bytes; detection records with per-object lists."""
    local, beam, compare, boxes, inspect = scale_and_boxes_recipe()
    assert "--engine beam" in beam and compare.startswith("cmp ") and "--task detection" in boxes
    for step in (local, beam):
        done = run(step, tmp_path)
        assert done.returncode == 0, done.stderr
        assert "wrote split 'trainval'" in done.stdout
        if step == beam:  # Beam's own logging stays off stderr (the local engine shows a bar)
            assert done.stderr == ""
    done = run(compare, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for k in range(2):  # "the same bytes from both engines": every shard, not just the one shown
        shard = f"-0000{k}-of-00002.tfrecord"
        local_bytes = (tmp_path / "data" / f"local{shard}").read_bytes()
        assert local_bytes == (tmp_path / "data" / f"beam{shard}").read_bytes()
    done = run(boxes, tmp_path)
    assert done.returncode == 0 and "wrote split 'trainval': 10 records" in done.stdout, done.stderr
    done = run(inspect, tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(r"image/object/bbox/xmin\s+float\s+0-2\b", done.stdout), done.stdout


@pytest.mark.parametrize(
    "target, made",
    [
        ("student", "build/student"),
        ("assignments", "build/nbgrader/nbgrader_config.py"),
    ],
)
def test_make_classroom_targets_write_what_the_readme_says(target, made):
    done = subprocess.run(["make", target], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (ROOT / made).exists()
    notebooks = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if target == "student":
        assert sorted(p.name for p in (ROOT / made).glob("*.ipynb")) == notebooks
    else:
        sources = sorted(p.name for p in (ROOT / "build/nbgrader/source").glob("*/*.ipynb"))
        assert sources == notebooks


def test_make_lint_is_clean():
    done = subprocess.run(["make", "lint"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_run_notebooks_script_executes_a_notebook_in_place(tmp_path):
    """CONTRIBUTING's `python scripts/run_notebooks.py notebooks/NN_*.ipynb`, on small notebooks.

    (Every real notebook is executed by the notebook checks of `make test` already.)
    """
    import nbformat

    folder = tmp_path / "notebooks"
    folder.mkdir()
    quiet = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    noisy = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import sys\nprint('careful', file=sys.stderr)")]
    )
    nbformat.write(quiet, folder / "01_print_answer.ipynb")
    nbformat.write(noisy, folder / "02_print_warning.ipynb")
    script = f"python {ROOT / 'scripts' / 'run_notebooks.py'}"
    done = run(f"{script} notebooks/[0-9][0-9]_*.ipynb", tmp_path)  # NN: any two digits
    assert done.returncode == 1, done.stdout + done.stderr  # the noisy one is refused
    lines = done.stdout.splitlines()
    assert lines[0].startswith("notebooks/01_print_answer.ipynb: ok")
    assert lines[1].startswith("notebooks/02_print_warning.ipynb: NOT SAVED")
    saved = nbformat.read(folder / "01_print_answer.ipynb", as_version=4).cells[0]
    assert saved.execution_count == 1 and saved.outputs[0].text == "42\n"
    assert nbformat.read(folder / "02_print_warning.ipynb", as_version=4).cells[0].outputs == []


def test_run_notebooks_no_save_executes_and_checks_but_writes_nothing(tmp_path):
    """`--no-save` (benchmarks/bench_suite.py times the notebooks with it): the same execution and
    checks, the files untouched."""
    import nbformat

    quiet = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    noisy = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    for name, nb in (("01_quiet.ipynb", quiet), ("02_fails.ipynb", noisy)):
        nbformat.write(nb, tmp_path / name)
    before = {p.name: p.read_bytes() for p in tmp_path.glob("*.ipynb")}
    script = f"python {ROOT / 'scripts' / 'run_notebooks.py'} --no-save"
    done = run(f"{script} 01_quiet.ipynb 02_fails.ipynb", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # the failing cell is still reported
    assert "02_fails.ipynb: NOT SAVED" in done.stdout and "01_quiet.ipynb: ok" in done.stdout
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.ipynb")} == before
