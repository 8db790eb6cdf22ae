"""The helpers judged by their structure, not by a line count (CONTRIBUTING.md, "Helpers").

- The saved code is the shown code (d2l's rule): a helper that a notebook presents as its own
  function kept for reuse has that function's body (:data:`SAVED_CODE`).
- Local limits instead of one total: ruff's C901 complexity at most 12 in every function, no
  module over 350 lines as ``ruff format`` writes it, no tuple literal assigned to several names
  (a swap and the unpacking of one call's result aside).
- Layers: ``helpers/__init__.py`` names them, and every import between helpers modules (lazy
  ones inside functions too) goes to the importer's own layer or a lower one.
- No ``fmt:`` markers anywhere. The total has no alarm here: CONTRIBUTING.md, "Helpers", says
  why.

Every file under ``helpers/`` counts, in sub-folders too (the sample data aside). Each checker is
a function of sources or folders, shown to fail on a planted violation by the test below it.
"""

import ast
import copy
import difflib
import re
import subprocess
import sys
from pathlib import Path

from test_helpers_design import (
    HELPER_FILES,
    HELPERS,
    NOTEBOOKS,
    ROOT,
    formatted_lines,
    helper_files,
    module_name,
    notebook_code,
)

MAX_COMPLEXITY = 12  # ruff's C901 (mccabe), in every function of helpers/
MAX_MODULE_LINES = 350  # as `ruff format` writes a module


def test_only_python_lives_under_helpers_besides_its_sample_data():
    """The checks read Python: any other file (a ``.pyx``, a data table) would escape them."""
    others = [
        str(path.relative_to(ROOT))
        for path in HELPERS.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc")
        if not {"sample_data", "__pycache__"} & set(path.relative_to(HELPERS).parts)
    ]
    assert not others, f"files under helpers/ that the design checks cannot read: {others}"


def test_the_checks_see_files_in_sub_folders(tmp_path):
    for name in ("a.py", "sub/b.py", "sub/deeper/__init__.py", "sample_data/c.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    found = [module_name(path, tmp_path) for path in helper_files(tmp_path)]
    assert found == ["a", "sub.b", "sub.deeper"]


# --- The saved code is the shown code -------------------------------------------------------

#: ``(helper, notebook, function)``: the helper is the notebook's function, kept for reuse, as
#: the notebook says ("`pipeline.crop_or_pad` is the function above", "is this function kept
#: for reuse", "the same formula"). Not listed: where the notebook calls the helper a sturdier
#: or faster version that differs by design (04's ``write_sharded``, "the sturdy version of
#: that loop"; 05's ``voc_batches``, "``read_batches`` plus what a library needs"; 07's
#: ``index.build_index``, "this walk made sturdy", a chunked walk with NumPy checked against
#: ``record_starts``; 08's ``frame_windows``; 14's ``detection_example`` and
#: ``parse_detection``, "the sturdy version of ``parse``"), or shows steps in no function
#: (01's ``arrays.pack``; 07's ``shuffle.permutation``, whose order notebook 18 builds as a
#: Feistel network of its own rather than as this function; 08's ``read_day_sequence``; 10's
#: ``check_header`` and ``check_payload``).
SAVED_CODE = [
    ("pipeline.crop_or_pad", "05", "crop_or_pad"),
    ("pipeline.flip_together", "05", "flip_together"),
    ("records.masked_crc32c", "11", "masked_crc"),
]


def without_docstrings(function: ast.FunctionDef) -> ast.FunctionDef:
    """A copy of ``function`` without the docstrings of it and of the functions inside it."""
    function = copy.deepcopy(function)
    for node in ast.walk(function):
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if isinstance(node, kinds) and ast.get_docstring(node, clean=False) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return function


def is_check_call(node: ast.expr) -> bool:
    """``check_int(...)``, ``_check_size(...)`` or a tuple of such calls."""
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(is_check_call(e) for e in node.elts)
    if not isinstance(node, ast.Call):
        return False
    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
    return name.lstrip("_").startswith("check_")


def is_argument_check(statement: ast.stmt) -> bool:
    """A statement a helper may put before the shown code: an import (the notebook imported in
    its Setup cell), an ``if`` without ``else`` that ends in ``raise`` (refusing bad input), or
    a check function's call (``size = _check_size(size)``, ``check_int(n, "n")``)."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(statement, ast.If):
        return not statement.orelse and isinstance(statement.body[-1], ast.Raise)
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Expr)):
        return statement.value is not None and is_check_call(statement.value)
    return False


def shown_body(function: ast.FunctionDef) -> list[ast.stmt]:
    """What is compared: the body without docstrings and without its leading argument checks
    (the checks end at the first other statement; comments are not in the syntax tree)."""
    body = without_docstrings(function).body
    while body and is_argument_check(body[0]):
        body = body[1:]
    return body


def body_difference(helper: ast.FunctionDef, shown: ast.FunctionDef) -> str | None:
    """None if the two bodies are the same code (:func:`shown_body`), else their diff."""
    ours, theirs = shown_body(helper), shown_body(shown)
    if [ast.dump(s) for s in ours] == [ast.dump(s) for s in theirs]:
        return None
    lines = [ast.unparse(ast.Module(body, [])).splitlines() for body in (theirs, ours)]
    diff = difflib.unified_diff(*lines, "notebook", "helper", lineterm="", n=1)
    return "\n".join(list(diff)[2:])


def defined_function(source: str, name: str) -> ast.FunctionDef | None:
    """The first top-level ``def name`` of ``source`` (a notebook defines before it uses)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    return None


def helper_function(entry: str) -> ast.FunctionDef | None:
    """The function ``module.name`` stands for, followed through ``from helpers.X import name``
    (``records.masked_crc32c`` is defined in ``_framing``)."""
    module, _, name = entry.rpartition(".")
    folder = HELPERS.joinpath(*module.split("."))
    paths = [folder.with_suffix(".py"), folder / "__init__.py"]
    source = next((path.read_text() for path in paths if path.is_file()), None)
    if source is None:
        return None
    found = defined_function(source, name)
    if found is not None:
        return found
    for node in ast.parse(source).body:  # not defined here: imported from another module?
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers."):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return helper_function(f"{node.module.removeprefix('helpers.')}.{alias.name}")
    return None


def notebook_function(number: str, name: str) -> ast.FunctionDef | None:
    paths = [path for path in NOTEBOOKS if path.name.startswith(f"{number}_")]
    return defined_function(notebook_code(paths[0]), name) if paths else None


def test_the_saved_code_is_the_shown_code():
    """d2l's rule: a helper kept from a notebook has that cell's body, not a denser rewrite.
    Undo the rewrite, or show the helper's code in the notebook."""
    wrong = []
    for entry, number, name in SAVED_CODE:
        helper, shown = helper_function(entry), notebook_function(number, name)
        if helper is None:
            wrong.append(f"{entry}: helpers has no such function (notebook {number}'s {name})")
        elif shown is None:
            wrong.append(f"{entry}: notebook {number} defines no function {name} to keep")
        elif difference := body_difference(helper, shown):
            wrong.append(f"{entry} is not notebook {number}'s {name}:\n{difference}")
    assert not wrong, "\n\n".join(wrong)


SHOWN = '''
def crop(image, size):
    """Crop image to size."""
    excess = image - size  # what is cut away
    missing = size - image
    return excess, missing
'''


def test_the_saved_code_check_drops_docstrings_comments_and_leading_checks_only():
    saved = '''
def crop(image, size: tuple[int, int]) -> tuple:
    """Crop or pad ``image`` to ``size``. ValueError for a bad size."""
    import tensorflow as tf

    if len(size) != 2:
        raise ValueError("size must be (height, width)")
    size = _check_size(size)
    excess = image - size
    missing = size - image  # pad
    return excess, missing
'''
    assert body_difference(defined_function(saved, "crop"), defined_function(SHOWN, "crop")) is None
    folded = saved.replace("    excess = image - size\n    missing = size - image  # pad\n", "")
    folded = folded.replace(
        "    return", "    excess, missing = image - size, size - image\n    return"
    )
    difference = body_difference(defined_function(folded, "crop"), defined_function(SHOWN, "crop"))
    assert "+excess, missing = (image - size, size - image)" in difference
    late_check = saved.replace("    return", "    check_int(size, 'size')\n    return")
    assert body_difference(defined_function(late_check, "crop"), defined_function(SHOWN, "crop"))


def test_the_saved_code_check_finds_a_reexported_helper():
    function = helper_function("records.masked_crc32c")
    assert function is not None and function.name == "masked_crc32c"
    assert helper_function("records.no_such_helper") is None


# --- Local limits instead of one total ------------------------------------------------------


def too_complex(folder: Path, limit: int = MAX_COMPLEXITY) -> list[str]:
    """Functions over ``limit`` in ruff's C901 (mccabe) anywhere under ``folder``. Run here,
    not in ``make lint``'s rule set, so that lint stays green while this test names them."""
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise"]
    ruff += ["--select", "C901", "--config", f"lint.mccabe.max-complexity = {limit}", str(folder)]
    done = subprocess.run(ruff, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode in (0, 1), done.stderr
    return [line for line in done.stdout.splitlines() if ": C901 " in line]


def long_modules(
    paths: list[Path], folder: Path = HELPERS, limit: int = MAX_MODULE_LINES
) -> list[str]:
    lines = {path.relative_to(folder): formatted_lines(path) for path in paths}
    return [f"{path}: {n} lines" for path, n in lines.items() if n > limit]


def is_swap(targets: ast.Tuple | ast.List, values: ast.Tuple | ast.List) -> bool:
    """``a, b = b, a``: the values are the targets themselves, in another order."""
    names = (ast.Name, ast.Attribute, ast.Subscript)
    if not all(isinstance(e, names) for e in [*targets.elts, *values.elts]):
        return False
    return sorted(map(ast.unparse, targets.elts)) == sorted(map(ast.unparse, values.elts))


def tuple_assignments(source: str) -> list[str]:
    """``a, b = x, y``: a tuple (or list) literal assigned to several targets, names or
    attributes, unless it is a swap. Allowed, as one value unpacked: ``a, b = f()``, ``a, b =
    pair``, ``a, b = (f(x) for x in xs)``, and the targets of ``for`` and comprehensions."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Tuple, ast.List)):
            for target in node.targets:
                several = isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) > 1
                if several and not is_swap(target, node.value):
                    found.append((node.lineno, ast.unparse(node)))
    return [f"line {line}: {code}" for line, code in sorted(found)]


def test_no_function_is_too_complex():
    found = too_complex(HELPERS)
    assert not found, f"over C901 complexity {MAX_COMPLEXITY}: split them: {found}"


def test_no_module_is_too_long():
    found = long_modules(HELPER_FILES)
    assert not found, f"modules over {MAX_MODULE_LINES} formatted lines: split by topic: {found}"


def test_no_tuple_literal_is_assigned_to_several_names():
    """CONTRIBUTING: one assignment per line; ``a, b = x, y`` folds two lines into one."""
    found = [
        f"{path.relative_to(ROOT)} {hit}"
        for path in HELPER_FILES
        for hit in tuple_assignments(path.read_text())
    ]
    listed = "\n".join(found)
    assert not found, f"{len(found)} tuple literals assigned to several names:\n{listed}"


def test_the_local_limits_see_a_planted_violation(tmp_path):
    branches = "".join(f"    if x == {k}:\n        return {k}\n" for k in range(MAX_COMPLEXITY))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tangled.py").write_text(f"def tangled(x):\n{branches}    return x\n")
    assert [line.split(": ", 1)[1] for line in too_complex(tmp_path)] == [
        f"C901 `tangled` is too complex ({MAX_COMPLEXITY + 1} > {MAX_COMPLEXITY})"
    ]
    (tmp_path / "long.py").write_text("".join(f"x{k} = {k}\n" for k in range(MAX_MODULE_LINES + 1)))
    (tmp_path / "fits.py").write_text("".join(f"x{k} = {k}\n" for k in range(MAX_MODULE_LINES)))
    paths = [tmp_path / "long.py", tmp_path / "fits.py"]
    assert long_modules(paths, tmp_path) == [f"long.py: {MAX_MODULE_LINES + 1} lines"]


def test_the_tuple_check_allows_swaps_and_one_unpacked_value_only():
    source = (
        "a, b = 1, 2\nself.x, self.y = x, y\n[c, d] = [f(), g()]\n"  # three folded lines
        "a, b = b, a\nself.x, self.y = self.y, self.x\n"  # swaps
        "a, b = f()\na, b = pair\nh, w = (int(s) for s in sizes)\nx = 1, 2\n"
        "for k, v in zip(a, b):\n    pass\n"
    )
    assert tuple_assignments(source) == [
        "line 1: a, b = (1, 2)",
        "line 2: self.x, self.y = (x, y)",
        "line 3: [c, d] = [f(), g()]",
    ]


# --- Layers ---------------------------------------------------------------------------------

# "N. Name: ``module``, ``module``: what they hold" in the package docstring.
LAYER = re.compile(r"^(\d+)\. ([^:]+): ((?:``[\w.]+``(?:, )?)+)(?::|$)")


def layers(docstring: str) -> dict[str, list[tuple[int, str]]]:
    """``{module: [(rank, layer name)]}`` from the numbered list of a docstring, lowest first
    (a module named by two layers has two places: an error)."""
    found: dict[str, list[tuple[int, str]]] = {}
    for item in re.split(r"\n(?=\d+\. )", docstring):
        if named := LAYER.match(" ".join(item.split())):
            for module in re.findall(r"``([\w.]+)``", named[3]):
                found.setdefault(module, []).append((int(named[1]), named[2]))
    return found


def imported_modules(source: str, package: tuple[str, ...], modules: set[str]) -> set[str]:
    """The helpers modules that ``source`` imports anywhere (inside functions too), for a module
    in sub-package ``package`` of helpers (relative imports); ``__init__`` for the package."""

    def longest(parts: list[str]) -> str:  # helpers.sub.tool.run: the module sub.tool
        for end in range(len(parts), 0, -1):
            if ".".join(parts[:end]) in modules:
                return ".".join(parts[:end])
        return "__init__"

    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "helpers":
                    found.add(longest(parts[1:]))
        elif isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".") if node.module else []
            if node.level:  # from . import x: x of this module's own package
                parts = list(package[: len(package) - node.level + 1]) + parts
            elif parts[0] == "helpers":
                parts = parts[1:]
            else:
                continue
            found |= {longest(parts + [alias.name]) for alias in node.names}
    return found


def layer_violations(layered: dict[str, list], imports: dict[str, set[str]]) -> list[str]:
    """Modules in no layer or in several, layers that name no module, and imports of a module
    in a higher layer than the importer's."""
    wrong = [f"{m}: in no layer" for m in sorted(imports) if m not in layered]
    wrong += [f"{m}: in several layers {p}" for m, p in layered.items() if len(p) > 1]
    wrong += [
        f"{m}: a layer names it, but there is no such module" for m in layered if m not in imports
    ]
    for module, targets in sorted(imports.items()):
        for target in sorted(targets):
            if len(layered.get(module, ())) == len(layered.get(target, ())) == 1:
                (mine, name), (theirs, other) = layered[module][0], layered[target][0]
                if theirs > mine:
                    wrong.append(f"{module} ({name}) imports {target} ({other})")
    return wrong


def helpers_imports(files: list[Path], folder: Path = HELPERS) -> dict[str, set[str]]:
    modules = {module_name(path, folder) for path in files}
    found = {}
    for path in files:
        package = path.relative_to(folder).parent.parts
        found[module_name(path, folder)] = imported_modules(path.read_text(), package, modules)
    return found


def test_every_module_imports_only_its_own_layer_or_a_lower_one():
    """The layers are the list in ``helpers/__init__.py``'s docstring, lowest first."""
    layered = layers(ast.get_docstring(ast.parse((HELPERS / "__init__.py").read_text())) or "")
    assert len({place for places in layered.values() for place in places}) >= 2, "no layers"
    wrong = layer_violations(layered, helpers_imports(HELPER_FILES))
    assert not wrong, f"helpers/__init__.py's layers: {wrong}"


def test_the_layer_check_sees_every_kind_of_import_upwards():
    docstring = (
        "Layers.\n\n1. Core: ``_core``, ``__init__``, ``twice``: checks.\n2. Engine: ``records``,\n"
        "   ``index``: files.\n3. Front ends: ``cli``, ``sub.tool``, ``gone``, ``twice``: commands.\n"
    )
    layered = layers(docstring)
    assert layered["index"] == [(2, "Engine")] and layered["sub.tool"] == [(3, "Front ends")]
    imports = {
        "_core": {"records"},  # from helpers.records import x
        "__init__": set(),
        "records": {"index", "_core"},  # its own layer and a lower one: allowed
        "index": {"cli"},  # a lazy import inside a function counts as well
        "cli": {"sub.tool"},
        "sub.tool": set(),
        "twice": set(),
        "extra": set(),
    }
    assert layer_violations(layered, imports) == [
        "extra: in no layer",
        "twice: in several layers [(1, 'Core'), (3, 'Front ends')]",
        "gone: a layer names it, but there is no such module",
        "_core (Core) imports records (Engine)",
        "index (Engine) imports cli (Front ends)",
    ]
    source = (
        "import helpers.records as r\nfrom helpers import cli, VERSION\n"
        "from . import tool\nfrom ..records import x\n"
        "def f():\n    from helpers.sub.tool import run\n"
    )
    modules = {"records", "cli", "sub.tool", "sub"}
    found = imported_modules(source, ("sub",), modules)
    assert found == {"records", "cli", "__init__", "sub.tool"}


# --- No formatter markers ------------------------------------------------------------------


def formatter_markers(paths: list[Path], folder: Path = HELPERS) -> list[str]:
    return [
        f"{path.relative_to(folder)}:{number}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"#\s*fmt:", line)
    ]


def test_helpers_carry_no_formatter_markers():
    """``# fmt: skip`` / ``off`` would let a module's length be met by cramming."""
    marked = formatter_markers(HELPER_FILES)
    assert not marked, f"formatter markers in helpers/: {marked}"


def test_the_marker_check_sees_a_planted_marker(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "dense.py").write_text("x = 1\ny = [1,2]  # fmt: skip\n")
    assert formatter_markers([tmp_path / "sub" / "dense.py"], tmp_path) == ["sub/dense.py:2"]
