"""The helper library stays small, lazy and used: the design card's "small helper module".

A notebook teaches; ``helpers`` remembers only what a notebook has shown. These checks
keep it that way: a line budget, a budget of public names, every module and every public name
used by a notebook or the command line (matched by module, not by name alone), every name taken
from a module present in it, and no TensorFlow imported by importing any module.
"""

import ast
import functools
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = ROOT / "helpers"
MODULES = sorted(p for p in HELPERS.glob("*.py") if p.name != "__main__.py")
# Lines as `ruff format` writes helpers/ (no `fmt:` markers allowed): new code pays for itself
# with structure, never with density (CONTRIBUTING.md, "Helpers", names what we do not write).
MAX_LINES, MAX_PUBLIC_NAMES = 2800, 80


def public_names(path: Path) -> list[str]:
    """Module-level functions, classes and assignments whose names do not start with '_'."""
    if path.name.startswith("_"):
        return []
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names.append(name.id)
    return [name for name in names if not name.startswith("_")]


def notebook_code(path: Path) -> str:
    """The code cells as Python: a ``%%writefile`` cell's file, other magics as IPython's calls."""
    from IPython.core.inputtransformer2 import TransformerManager

    notebook, python = json.loads(path.read_text()), TransformerManager().transform_cell
    sources = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    written = [s.partition("\n")[2] for s in sources if s.startswith("%%writefile")]
    return "\n".join([python(s) for s in sources] + written)


def helper_uses(source: str) -> dict[str, set[str]]:
    """The helpers modules that Python ``source`` imports, each with the names it takes from it.

    ``from helpers.M import a`` takes ``a`` from ``M``; after ``from helpers import M`` (or
    ``import helpers.M``) every ``M.x`` (``helpers.M.x``) takes ``x``. Matching by module and
    name, not by name alone: ``beam.convert_split`` is not ``voc_records.convert_split``.
    """
    tree = ast.parse(source)
    uses: dict[str, set[str]] = {}
    modules = {}  # local name -> helpers module, after `from helpers import M [as name]`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            package, _, module = node.module.partition(".")
            if package == "helpers" and module:
                uses.setdefault(module.split(".")[0], set()).update(a.name for a in node.names)
            elif package == "helpers":
                for alias in node.names:
                    uses.setdefault(alias.name, set())
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                package, _, module = alias.name.partition(".")
                if package == "helpers" and module:
                    uses.setdefault(module.split(".")[0], set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in modules:
                uses[modules[node.value.id]].add(node.attr)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            if isinstance(node.value.value, ast.Name) and node.value.value.id == "helpers":
                uses.setdefault(node.value.attr, set()).add(node.attr)
    return uses


@functools.cache
def users() -> dict[str, dict[str, set[str]]]:
    """Who uses the helpers: each notebook, the command line and every helpers module."""
    found = {
        path.name: notebook_code(path) for path in sorted((ROOT / "notebooks").glob("*.ipynb"))
    }
    found["the command line"] = (HELPERS / "cli.py").read_text()
    found["python -m helpers"] = (HELPERS / "__main__.py").read_text()
    for path in MODULES:
        if path.name != "cli.py":
            found[f"helpers.{path.stem}"] = path.read_text()
    return {user: helper_uses(source) for user, source in found.items()}


def outside_users(module: str) -> dict[str, dict[str, set[str]]]:
    """The users that count for ``module``: notebooks and the command line; for a private
    module (``_checks``) the other helpers modules, for ``cli`` ``python -m helpers``."""
    if module.startswith("_"):
        return {user: uses for user, uses in users().items() if user.startswith("helpers.")}
    wanted = ("python -m helpers",) if module == "cli" else ("the command line",)
    return {u: uses for u, uses in users().items() if u.endswith(".ipynb") or u in wanted}


def formatted_lines(path: Path) -> int:
    """How many lines ``ruff format`` (the project's settings) makes of ``path``."""
    ruff = [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(path), "-"]
    done = subprocess.run(ruff, input=path.read_text(), capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return len(done.stdout.splitlines())


def test_helpers_carry_no_formatter_markers():
    """``# fmt: skip`` / ``off`` would let a line budget be met by cramming."""
    marked = [
        f"{path.name}:{number}"
        for path in sorted(HELPERS.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "fmt:" in line
    ]
    assert not marked, f"formatter markers in helpers/: {marked}"


def test_helpers_stay_within_the_line_budget():
    lines = {p.name: formatted_lines(p) for p in sorted(HELPERS.glob("*.py"))}
    assert sum(lines.values()) <= MAX_LINES, f"{sum(lines.values())} lines: {lines}"


def test_helpers_stay_within_the_public_name_budget():
    names = {p.stem: public_names(p) for p in MODULES}
    total = sum(len(n) for n in names.values())
    assert total <= MAX_PUBLIC_NAMES, f"{total} public names: {names}"


def test_every_module_is_used_by_a_notebook_or_the_command_line():
    """Every module, also one that no notebook imports (``beam``: the CLI's ``--engine beam``)."""
    unused = [
        f"helpers.{path.stem}"
        for path in MODULES
        if path.name != "__init__.py"  # the package itself: every import runs it
        if not any(path.stem in uses for uses in outside_users(path.stem).values())
    ]
    assert not unused, f"imported by no notebook and not by the command line: {unused}"


def test_every_public_name_is_used_by_a_notebook_or_the_command_line():
    unused = [
        f"{path.stem}.{name}"
        for path in MODULES
        for name in public_names(path)
        if not any(name in uses.get(path.stem, ()) for uses in outside_users(path.stem).values())
    ]
    assert not unused, f"public but used by no notebook and not by the CLI: {unused}"


def test_every_name_taken_from_a_helpers_module_exists():
    """An attribute that a notebook, the CLI or another module takes from a module is there
    (``voc.load_pair`` in ``voc_records``): a renamed helper fails here, not in a lesson."""
    missing = [
        f"{user}: helpers.{module}.{name}"
        for user, uses in users().items()
        for module, names in uses.items()
        for name in sorted(names)
        if not hasattr(importlib.import_module(f"helpers.{module}"), name)
    ]
    assert not missing, f"taken from a module that has no such name: {missing}"


@pytest.mark.parametrize("module", [p.stem for p in MODULES], ids=[p.stem for p in MODULES])
def test_importing_a_module_imports_no_tensorflow(module):
    code = f"import sys, helpers.{module}; print('tensorflow' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "False\n", f"importing helpers.{module} imports TensorFlow"


# --- Internal means internal: no underscored name crosses a module line -----------------------

PROJECT_FOLDERS = ("helpers", "tests", "scripts", "benchmarks", "docs")


def project_sources() -> dict[str, str]:
    """Every Python source of the repository and the notebooks' code, by a readable name."""
    files = [ROOT / "conftest.py"] + sorted(
        path for folder in PROJECT_FOLDERS for path in (ROOT / folder).rglob("*.py")
    )
    found = {str(p.relative_to(ROOT)): p.read_text() for p in files if "sample_data" not in p.parts}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        found[f"notebooks/{path.name}"] = notebook_code(path)
    return found


def project_module_names() -> set[str]:
    """Top-level names under which the project's own modules are imported."""
    names = {"helpers", "benchmarks"}
    for folder in ("tests", "scripts"):  # imported by file name (tests/ is put on sys.path)
        names |= {path.stem for path in (ROOT / folder).glob("*.py")}
    return names


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_crossings(source: str, ours: set[str]) -> list[str]:
    """``from m import _x``, ``m._x`` and ``getattr(m, "_x")`` where ``m`` is one of ours."""
    tree, modules, found = ast.parse(source), set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in ours:
                folder = ROOT.joinpath(*node.module.split("."))
                for alias in node.names:
                    if (folder / f"{alias.name}.py").exists():  # a module (``_common`` too)
                        modules.add(alias.asname or alias.name)
                    elif is_private(alias.name):
                        found.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ours:
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr":
            target, name = (node.args + [None, None])[:2]
            named = isinstance(name, ast.Constant) and isinstance(name.value, str)
            if named and is_private(name.value) and ast.unparse(target).split(".")[0] in modules:
                found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


def test_no_underscored_name_crosses_a_module_line():
    """Package-internal code lives in underscored modules (``helpers._framing``) whose names are
    public; a name with a leading underscore is private to its module, tests included."""
    ours = project_module_names()
    crossing = {
        name: found
        for name, source in project_sources().items()
        if (found := private_crossings(source, ours))
    }
    assert not crossing, f"underscored names used outside their module: {crossing}"


def test_the_crossing_check_sees_each_way_in():
    ours = {"helpers"}
    source = (
        "from helpers.records import _commit, write_records\n"
        "from helpers import records\nimport helpers.index as index\n"
        "records._mask(1)\nindex.RecordView._open\ngetattr(records, '_temp_name')\n"
        "from helpers._framing import check_header\nrecords.__name__\n"
    )
    found = private_crossings(source, ours)
    assert sorted(f.split(" (")[0] for f in found) == [
        "from helpers.records import _commit",
        "getattr(records, '_temp_name')",
        "index.RecordView._open",
        "records._mask",
    ]


# --- Docstrings that stay true ----------------------------------------------------------------

NOTEBOOK_MENTION = re.compile(r"\bnotebooks? (\d\d(?:(?:,? and |, )\d\d)*)", re.IGNORECASE)


def docstrings(path: Path) -> list[tuple[str, str, str]]:
    """``(kind, name, docstring)`` of the module, its top-level functions and classes (a
    method counts as its class: a notebook that uses the class reaches it)."""
    tree = ast.parse(path.read_text())
    found = [("module", path.stem, ast.get_docstring(tree) or "")]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            inner = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            texts = [ast.get_docstring(n) or "" for n in ast.walk(node) if isinstance(n, inner)]
            found.append(("name", node.name, "\n".join(t for t in texts if t)))
    return found


RUNS_THE_COMMAND_LINE = re.compile(r'python -m helpers|"-m", "helpers"')


def notebook_uses(notebook_number: str) -> list[dict[str, set[str]]]:
    """What notebook ``NN`` uses of helpers; one that runs ``python -m helpers`` also uses
    the command line and what it uses."""
    found = []
    for path in sorted((ROOT / "notebooks").glob(f"{notebook_number}_*.ipynb")):
        uses = {module: set(names) for module, names in users()[path.name].items()}
        if RUNS_THE_COMMAND_LINE.search(notebook_code(path)):
            for module, names in users()["the command line"].items():
                uses.setdefault(module, set()).update(names)
            uses.setdefault("cli", set()).add("main")
        found.append(uses)
    return found


def public_importers(internal: str) -> list[str]:
    """The public helpers modules that import the internal module ``internal``."""
    return [
        user.removeprefix("helpers.")
        for user, uses in users().items()
        if user.startswith("helpers.") and internal in uses and not is_private(user[8:])
    ]


def uses_helper(notebook: dict[str, set[str]], module: str, kind: str, name: str) -> bool:
    """Whether a notebook's uses reach ``module.name`` (``kind`` "module": the module itself)."""
    if is_private(module):  # internal: through a public module that imports it
        return any(importer in notebook for importer in public_importers(module))
    if kind == "module" or is_private(name):  # a private function: its module is used
        return module in notebook
    return name in notebook.get(module, ())


def test_every_notebook_a_docstring_names_uses_that_helper():
    """ "notebook 04" in ``index.build_index``'s docstring: notebook 04 uses ``index.build_index``
    (a module's docstring: uses the module; an internal module's: a module that imports it)."""
    wrong = []
    for path in sorted(HELPERS.glob("*.py")):
        for kind, name, text in docstrings(path):
            numbers = {
                n for found in NOTEBOOK_MENTION.findall(text) for n in re.findall(r"\d\d", found)
            }
            for number in sorted(numbers):
                if not any(uses_helper(u, path.stem, kind, name) for u in notebook_uses(number)):
                    wrong.append(f"helpers/{path.name}: {name} names notebook {number}")
    assert not wrong, f"docstrings name notebooks that do not use the helper: {wrong}"


# --- Typed public functions ----------------------------------------------------------------------


def untyped_arguments(path: Path) -> list[str]:
    """Non-underscored functions and methods (``__init__`` and the like too) with an argument
    that has no annotation (``self`` and ``cls`` aside). Ruff checks their return types."""
    tree, found = ast.parse(path.read_text()), []
    scopes = [(node, "") for node in tree.body]
    scopes += [
        (item, f"{node.name}.")
        for node in tree.body
        if isinstance(node, ast.ClassDef) and not is_private(node.name)
        for item in node.body
    ]
    for node, owner in scopes:
        if not isinstance(node, ast.FunctionDef) or is_private(node.name):
            continue
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        arguments += [a for a in (node.args.vararg, node.args.kwarg) if a]
        missing = [
            a.arg for a in arguments if a.annotation is None and a.arg not in ("self", "cls")
        ]
        if missing:
            found.append(f"helpers/{path.name}: {owner}{node.name}({', '.join(missing)})")
    return found


def test_public_functions_annotate_every_argument():
    untyped = [found for path in sorted(HELPERS.glob("*.py")) for found in untyped_arguments(path)]
    assert not untyped, f"arguments without a type: {untyped}"
