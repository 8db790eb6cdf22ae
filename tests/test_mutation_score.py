"""The committed mutation score (tests/mutation_score.json, written by `make mutation`).

`make mutation` runs for hours, so this suite never runs it: it checks the result committed
from the last run. Every helpers module but plots, notebook and beam has an entry saying the
commit it measured, its verdicts add up, and each module, like the total, has at least 85%
of its mutants killed (timeouts count as killed, "no tests" as survived).
"""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import mutation_score as ms  # noqa: E402  (scripts/mutation_score.py)

#: The modules that are not mutated: drawing, notebook set-up and the Apache Beam pipeline.
NOT_MUTATED = {"helpers/plots.py", "helpers/notebook.py", "helpers/beam.py"}


@pytest.fixture(scope="module")
def record() -> dict:
    if not ms.SCORE_FILE.exists():
        pytest.fail(
            "tests/mutation_score.json is missing: run `make mutation` (hours on one core; "
            "one module: make mutation MODULE=records) and commit the file it writes",
            pytrace=False,
        )
    return json.loads(ms.SCORE_FILE.read_text())


def test_every_helpers_module_but_plots_notebook_and_beam_is_measured(record):
    every = {p.relative_to(ROOT).as_posix() for p in (ROOT / "helpers").glob("*.py")}
    assert set(ms.mutated_modules()) == every - NOT_MUTATED, "[tool.mutmut] in pyproject.toml"
    assert set(record["modules"]) == every - NOT_MUTATED, "run make mutation for the missing"


def test_each_entry_names_its_commit_and_its_verdicts_add_up(record):
    for module, entry in record["modules"].items():
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), module
        assert isinstance(entry["clean"], bool) and re.fullmatch(r"\d{4}-\d\d-\d\d", entry["date"])
        assert all(isinstance(entry[k], int) and entry[k] >= 0 for k in ms.COUNTS), module
        parts = sum(entry[k] for k in ms.COUNTS if k != "total")
        assert parts == entry["total"], f"{module}: the verdicts do not add up to the total"
        assert entry["not_checked"] == 0, f"{module}: the run did not finish"
        assert entry["score"] == ms.score(entry), module
    total = record["total"]
    assert all(total[k] == sum(e[k] for e in record["modules"].values()) for k in ms.COUNTS)
    assert total["score"] == ms.score(total) and record["threshold"] == ms.THRESHOLD == 0.85


def test_each_module_and_the_total_keep_at_least_85_percent_killed(record):
    low = {m: e["score"] for m, e in record["modules"].items() if e["score"] < 0.85}
    assert not low, f"mutation score below 85%: {low}"
    assert record["total"]["score"] >= 0.85


def test_timeouts_count_as_killed_and_no_tests_as_survived(tmp_path, monkeypatch):
    """The score script's reading of mutmut's verdicts (mutmut.stats names each exit code)."""
    (tmp_path / "mutants" / "helpers").mkdir(parents=True)
    codes = {"k1": 1, "k2": 1, "k3": 1, "k4": 1, "t": 36, "s": 0, "n": 33, "q": 35, "x": 34}
    meta = {"exit_code_by_key": {f"helpers.x.x_f__mutmut_{k}": c for k, c in codes.items()}}
    (tmp_path / "mutants" / "helpers" / "x.py.meta").write_text(json.dumps(meta))
    monkeypatch.setattr(ms, "ROOT", tmp_path)
    found = ms.counts("helpers/x.py")
    expected = {"killed": 4, "timeout": 1, "survived": 1, "no_tests": 1, "suspicious": 1}
    expected |= {"skipped": 1, "total": 9, "score": round(5 / 8, 4)}  # 5 killed of 8 not skipped
    assert {k: v for k, v in found.items() if v} == expected
    with pytest.raises(SystemExit, match="helpers/y.py: no results"):
        ms.counts("helpers/y.py")
