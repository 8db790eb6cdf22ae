"""The committed benchmark results say what they were measured on, and the README quotes them.

No timing is checked here (the machines are noisy): only that each reference result in
benchmarks/reference/ is complete and consistent with its own measured seconds, and that the
README's table is the one `benchmarks/reference.py` makes from reference/shuffle.json.
"""

import re
import statistics
from pathlib import Path

import pytest

from benchmarks import reference

ROOT = Path(__file__).resolve().parents[1]
#: The benchmarks whose reference result is committed (issue 25).
REFERENCED = ["records", "shuffle", "beam"]
SIZES = ["800", "100", "10000"]  # bench_shuffle.RECORD_SIZES, headline first


@pytest.fixture(params=REFERENCED)
def result(request):
    return reference.load(request.param)


def test_a_reference_result_names_its_commit_machine_and_package_versions(result):
    assert re.fullmatch(r"[0-9a-f]{40}", result["commit"]), result["commit"]
    machine = result["machine"]
    assert machine["cpus"] >= 1 and len(machine["load_average"]) == 3
    assert result["python"].startswith("3.11.")
    assert {"numpy", "protobuf"} <= set(result["packages"])
    assert "tensorflow-cpu" in result["packages"] or "tensorflow" in result["packages"]


def test_every_ratio_is_the_median_of_its_own_runs(result):
    assert result["comparisons"], "a reference result without comparisons"
    for found in result["comparisons"]:
        pairs = zip(found["baseline_seconds"], found["candidate_seconds"], strict=True)
        ratios = [b / c for b, c in pairs]
        assert len(ratios) >= 3, f"{found['name']}: fewer than 3 runs is not a result"
        assert found["speed_ratio_median"] == pytest.approx(statistics.median(ratios))
        assert found["speed_ratio_range"] == pytest.approx([min(ratios), max(ratios)])


def test_the_shuffle_reference_has_every_contender_at_every_record_size():
    result = reference.load("shuffle")
    assert list(result["shootout"]) == SIZES
    names = None
    for size in SIZES:
        run = result["shootout"][size]
        assert names is None or list(run["contenders"]) == names, f"{size} B: other contenders"
        names = list(run["contenders"])
        rounds, processes = run["rounds"], run["processes"]
        for name, rate in run["contenders"].items():
            assert len(rate["seconds"]) == rounds * processes >= 3, f"{size} B {name}"
            per_second = [run["records"] / s for s in rate["seconds"]]
            assert rate["records_per_second_median"] == pytest.approx(statistics.median(per_second))
            # each process's rounds, in turn: its median is the one it reports
            per_process = [
                rate["seconds"][k : k + rounds] for k in range(0, len(per_second), rounds)
            ]
            medians = [run["records"] / statistics.median(times) for times in per_process]
            assert rate["process_medians"] == pytest.approx(medians), f"{size} B {name}"
    assert len(names) == 13 and reference.VIEW in names


def test_the_readme_quotes_the_shuffle_reference_table_exactly():
    table = reference.shuffle_table(reference.load("shuffle"))
    readme = (ROOT / "README.md").read_text()
    assert table in readme, (
        f"README.md should hold this table (python -m benchmarks.reference):\n{table}"
    )


def test_the_table_changes_when_a_ratio_does():
    result = reference.load("shuffle")
    before = reference.shuffle_table(result)
    name = f"800 B: {reference.VIEW} vs tf.data shuffle(10_000)"
    reference.comparison(result, name)["speed_ratio_median"] += 0.5
    assert reference.shuffle_table(result) != before
    with pytest.raises(KeyError, match="no comparison 'missing'"):
        reference.comparison(result, "missing")
