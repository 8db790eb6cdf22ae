"""The committed benchmark results say what they were measured on, and the README quotes them.

No timing is checked here (the machines are noisy): only that each reference result in
benchmarks/reference/ is complete and consistent with its own measured seconds, and that the
README's tables are the ones `benchmarks/reference.py` makes from them.
"""

import re
import statistics
from pathlib import Path

import pytest

from benchmarks import reference

ROOT = Path(__file__).resolve().parents[1]
#: The benchmarks whose reference result is committed (issue 25).
REFERENCED = ["records", "shuffle", "beam", "pipeline"]
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


MODES = ["speed", "reproducible"]  # bench_shuffle.MODES: issue 35's two named modes


def check_shootout(result: dict, sizes: list[str], modes: list[str]) -> None:
    """What a shootout result must hold: every contender at every size and mode, each rate the
    median of its own rounds, each process's median its own, the per-process figures (opening
    the view, first batches, Grain's resume), and every paired ratio of the issue."""
    from benchmarks import bench_shuffle

    assert list(result["shootout"]) == sizes
    names = None
    comparisons = {found["name"]: found for found in result["comparisons"]}
    for size in sizes:
        run = result["shootout"][size]
        assert run["page_cache"].startswith("warm"), f"{size} B: the page cache is not stated"
        assert list(run["modes"]) == modes, f"{size} B: modes {list(run['modes'])}"
        rounds, processes, records = run["rounds"], run["processes"], run["records"]
        for mode, measured in run["modes"].items():
            where = f"{size} B {mode}"
            assert names is None or list(measured["contenders"]) == names, f"{where}: contenders"
            names = list(measured["contenders"])
            for name, rate in measured["contenders"].items():
                assert len(rate["seconds"]) == rounds * processes >= 3, f"{where} {name}"
                per_second = [records / s for s in rate["seconds"]]
                assert rate["records_per_second_median"] == pytest.approx(
                    statistics.median(per_second)
                )
                # each process's rounds, in turn: its median is the one it reports
                per_process = [
                    rate["seconds"][k : k + rounds] for k in range(0, len(per_second), rounds)
                ]
                medians = [records / statistics.median(times) for times in per_process]
                assert rate["process_medians"] == pytest.approx(medians), f"{where} {name}"
            assert len(measured["open_view_seconds"]) == processes, where
            for opened in measured["open_view_seconds"]:
                assert 0 < opened["again_median"] and 0 < opened["first_in_process"], where
            for name, firsts in measured["first_batch_seconds"].items():
                assert len(firsts) == processes and min(firsts) > 0, f"{where} first batch {name}"
            for resumed in measured["grain_resume_same_batches"]:
                assert set(resumed) == {
                    bench_shuffle.grain_name("RecordView", workers) for workers in (False, True)
                }, where
            for candidate, baseline, goal, worst in bench_shuffle.SHOOTOUT_RATIOS:
                if baseline == "best ArrayRecord":
                    baseline = measured["best_array_record"]
                found = comparisons[f"{size} B {mode}: {candidate} vs {baseline}"]
                assert found["baseline_seconds"] == measured["contenders"][baseline]["seconds"]
                assert found["candidate_seconds"] == measured["contenders"][candidate]["seconds"]
                expected = (goal, worst) if mode == "speed" else (None, None)
                assert (found["goal"], found["worst_goal"]) == expected, found["name"]
    for name in (bench_shuffle.VIEW, bench_shuffle.GLOBAL, bench_shuffle.SHUFFLE):
        assert name in names, f"no {name!r} in the shootout"


def test_the_shuffle_reference_has_every_contender_at_every_record_size_and_mode():
    result = shuffle_reference_in_two_modes()
    check_shootout(result, SIZES, MODES)


def made_up_shootout() -> dict:
    """A shuffle result summarized by bench_shuffle's own code from made-up seconds (2
    processes of 2 rounds, 1,000 records of 800 bytes, both modes)."""
    from benchmarks import _common, bench_shuffle

    pairs = [(candidate, baseline) for candidate, baseline, *_ in bench_shuffle.SHOOTOUT_RATIOS]
    names = list(dict.fromkeys(n for pair in pairs for n in pair if n != "best ArrayRecord"))
    names += [bench_shuffle.ARRAY_RECORD.format(n) for n in bench_shuffle.ARRAY_RECORD_PARALLELISM]

    def run(k: int) -> dict:
        return {
            "seconds": {
                name: [0.1 + 0.01 * (k + i + r) for r in range(2)] for i, name in enumerate(names)
            },
            "open_view": {"first_in_process": 0.02, "again_median": 0.001, "again": [0.001]},
            "first_batch": {bench_shuffle.VIEW: 0.003},
            "grain_resume": {
                bench_shuffle.grain_name("RecordView", w): True for w in (False, True)
            },
        }

    _common.RESULTS.clear()
    shootout = {
        "records": 1000,
        "shards": 3,
        "batch": 256,
        "rounds": 2,
        "processes": 2,
        "page_cache": "warm",
        "modes": {},
    }
    for mode in MODES:
        summary = bench_shuffle.summarize([run(0), run(1)], 1000)
        bench_shuffle.shootout_ratios(800, mode, summary)
        shootout["modes"][mode] = summary
    result = {
        "benchmark": "shuffle",
        "commit": "0" * 40,
        "machine": {"cpus": 2, "load_average": [1.0, 1.0, 1.0]},
        "shootout": {"800": shootout},
        "comparisons": [c.as_dict() for c in _common.RESULTS],
    }
    _common.RESULTS.clear()
    return result


def test_the_shootout_check_accepts_what_bench_shuffle_records_and_fails_on_a_change():
    """The check above, on a made-up shootout, then on copies with one figure changed."""
    import copy

    from benchmarks import bench_shuffle

    result = made_up_shootout()
    check_shootout(result, ["800"], MODES)
    for change in ("seconds", "process_medians", "goal", "resume"):
        broken = copy.deepcopy(result)
        speed = broken["shootout"]["800"]["modes"]["speed"]
        if change == "seconds":
            speed["contenders"][bench_shuffle.VIEW]["seconds"][0] *= 2
        elif change == "process_medians":
            speed["contenders"][bench_shuffle.VIEW]["process_medians"].reverse()
        elif change == "goal":
            broken["comparisons"][0]["goal"] = None
        else:
            speed["grain_resume_same_batches"][0].popitem()
        with pytest.raises((AssertionError, KeyError)):
            check_shootout(broken, ["800"], MODES)


def test_the_shuffle_table_has_a_row_per_headline_with_its_mode_output_goal_and_worst_round():
    result = made_up_shootout()
    table = reference.shuffle_table(result)
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == len(reference.HEADLINES)
    for row, (label, mode, out, *_) in zip(rows, reference.HEADLINES, strict=True):
        assert row.startswith(f"| {label} | {mode} | {out} | "), row
    assert "| speed | tensors | >= 1.20x, worst round >= 0.95x |" in rows[0]
    assert "| reproducible | tensors | - | - |" in rows[1], "no goals in reproducible mode"
    for text in ("warm page cache", "speed and reproducible", "2 fresh processes of 2 rounds"):
        assert text in table
    # the worst round: the made-up ratios are near 1, below the view's 5.0x goal
    assert "| no: 800 B |" in rows[3]


def shuffle_reference_in_two_modes() -> dict:
    result = reference.load("shuffle")
    if "modes" not in next(iter(result["shootout"].values())):
        pytest.skip(
            "reference/shuffle.json predates issue 35's two modes: the lead reruns "
            "`python -m benchmarks --reference shuffle`, then pastes the table "
            "`python -m benchmarks.reference` prints into README.md"
        )
    return result


def test_the_readme_quotes_the_shuffle_reference_table_exactly():
    table = reference.shuffle_table(shuffle_reference_in_two_modes())
    readme = (ROOT / "README.md").read_text()
    assert table in readme, (
        f"README.md should hold this table (python -m benchmarks.reference):\n{table}"
    )


def test_the_table_changes_when_a_ratio_does():
    result = shuffle_reference_in_two_modes()
    before = reference.shuffle_table(result)
    changed = 0
    for found in result["comparisons"]:  # one at a time: whatever rows reference.py picks
        found["speed_ratio_median"] += 0.5
        if reference.shuffle_table(result) != before:
            changed += 1
        found["speed_ratio_median"] -= 0.5
    assert changed >= 3, f"only {changed} of the reference's ratios are in the table"
    assert reference.shuffle_table(result) == before
    with pytest.raises(KeyError, match="no comparison 'missing'"):
        reference.comparison(result, "missing")


def test_the_scale_runs_writer_writes_what_write_records_writes(tmp_path, monkeypatch):
    from benchmarks import bench_scale
    from helpers.records import iter_records, write_records

    monkeypatch.setattr(bench_scale, "CHUNK_RECORDS", 2)  # 5 records: 3 chunks, the last short
    bench_scale.write_shard(tmp_path / "fast", 7, 5, 100)
    payloads = list(iter_records(tmp_path / "fast"))  # both CRCs checked
    assert [int.from_bytes(p[:8], "little") for p in payloads] == [7, 8, 9, 10, 11]
    assert {len(p) for p in payloads} == {100} and len({p[8:] for p in payloads}) == 1
    write_records(tmp_path / "helpers", payloads)
    assert (tmp_path / "fast").read_bytes() == (tmp_path / "helpers").read_bytes()
    assert not list(tmp_path.glob("*.partial"))


def test_the_scale_runs_shards_are_consecutive_blocks_of_every_record():
    from benchmarks.bench_scale import shard_layout

    assert shard_layout(10, 4) == [0, 3, 6, 9, 10]
    assert shard_layout(10**8, 100)[1] == 10**6 and shard_layout(10**8, 100)[-1] == 10**8


def test_the_scale_reference_if_committed_holds_every_measurement():
    try:
        result = reference.load("scale")
    except FileNotFoundError:
        pytest.skip("no reference/scale.json yet: the lead runs `make bench-scale` (opt-in)")
    check_scale(result, ["100x100000000", "10000x1000000"], 10**6)


def test_the_readme_quotes_the_scale_reference_table_exactly():
    try:
        table = reference.scale_table(reference.load("scale"))
    except FileNotFoundError:
        pytest.skip("no reference/scale.json yet: the lead runs `make bench-scale` (opt-in)")
    readme = (ROOT / "README.md").read_text()
    assert table in readme, (
        f"README.md should hold this table (python -m benchmarks.reference):\n{table}"
    )


def check_scale(result: dict, sets: list[str], sample: int) -> None:
    """What a scale result must hold: the probe at every thread count and its best, the four
    epochs and the view on the probe's sample against it, each from a dropped cache, opening
    cold and warm, a worker's memory against a small view's, the order, the write and index."""
    scale = result["scale"]
    assert "cold" in scale["page_cache"] and "host" in scale["page_cache"]
    assert list(scale["sets"]) == sets
    for name, found in scale["sets"].items():
        runs = found["probe"]["runs"]
        assert [run["threads"] for run in runs] == [1, 2, 4, 8, 16, 32], name
        best = max(run["records_per_second"] for run in runs)
        assert found["probe"]["best"]["records_per_second"] == best, name
        assert found["probe"]["sample"] == min(sample, found["records"]), name
        ways = ["view", "global_shuffle_dataset", "tf.data in order", "tf.data shuffle(10_000)"]
        assert list(found["epochs"]) == ways, name
        for how, epoch in [*found["epochs"].items(), ("sample", found["view_on_probe_sample"])]:
            assert epoch["vs_best_probe"] == pytest.approx(epoch["records_per_second"] / best)
            after, before = (
                epoch["page_cache"]["cached_mib_after"],
                epoch["page_cache"]["cached_mib_before"],
            )
            assert after <= before, f"{name} {how}: the cache was not dropped"
        assert set(found["open_and_first_batch"]) == {"cold", "warm"}, name
        memory = found["worker_memory"]
        assert (
            memory["view"]["records"] == found["records"]
            and memory["small_view"]["records"] == 1000
        )
        extra = memory["view"]["holding_mib"]["uss"] - memory["small_view"]["holding_mib"]["uss"]
        assert memory["extra_uss_mib"] == pytest.approx(extra), name
        assert found["epoch_order"]["records"] == found["records"], name
        assert {"write_seconds", "index_seconds"} <= set(found), f"{name}: write and index times"


def test_the_pipeline_reference_measures_voc_batches_whole_and_in_the_steady_state():
    result = reference.load("pipeline")
    assert result["pipeline"]["page_cache"] == "warm" and result["pipeline"]["tensorflow_mode"]
    held = [found["name"] for found in result["comparisons"] if found["goal"] is not None]
    assert held[0] == "5 voc_batches: 4 + checks, buffer_size=0, autotune off", held
    assert "5 voc_batches, 1,464 records per epoch, against bare reading" in held
    steady = "5 voc_batches, the middle half of 1,464 records, against bare reading"
    assert steady in held, held
    for name in held:  # each measured in CPU time too, in the same runs
        wall = reference.comparison(result, name)
        cpu = reference.comparison(result, f"{name}, CPU time")
        assert len(wall["baseline_seconds"]) == len(cpu["baseline_seconds"]) == 9
        assert (wall["goal"], wall["worst_goal"]) == (0.6, 0.5)


def test_the_readme_quotes_the_pipeline_reference_table_exactly():
    table = reference.pipeline_table(reference.load("pipeline"))
    readme = (ROOT / "README.md").read_text()
    assert table in readme, (
        f"README.md should hold this table (python -m benchmarks.reference):\n{table}"
    )


def test_the_pipeline_table_has_a_row_per_goal_that_changes_with_its_ratio():
    result = reference.load("pipeline")
    before = reference.pipeline_table(result)
    held = [found for found in result["comparisons"] if found["goal"] is not None]
    assert before.count("\n| ") == len(held) + 1  # the header, then a row each
    for found in held:
        found["speed_ratio_median"] += 0.5
        assert reference.pipeline_table(result) != before, found["name"]
        found["speed_ratio_median"] -= 0.5
        found["goal_met"] = not found["goal_met"]
        assert reference.pipeline_table(result) != before, found["name"]
        found["goal_met"] = not found["goal_met"]
