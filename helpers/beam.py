"""The Beam engine of ``convert-voc``: the local engine's shard files, written by Apache Beam.

Notebook 14 shows them byte-identical to :func:`helpers.voc_records.convert_split`'s, and the
pipeline run in a process of its own (notebook 14, "Keep the order: number, group, sort,
write")."""

import builtins
import contextlib
import inspect
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from helpers import voc
from helpers._commit import committing, output_folder, shard_paths, temp_path
from helpers._examples import check_task
from helpers._index_files import staged_index
from helpers._tensorflow import QUIET_ENVIRONMENT
from helpers.index import build_index
from helpers.records import write_records
from helpers.voc_records import convert_split, record_payload, split_order

# The error line of a worker's traceback text (a VOCError or a built-in error), minus Beam's tag.
_WORKER_ERROR = re.compile(r"^(helpers\.voc\.\w+|\w*Error): (.*?)( \[while running .*\])?$", re.M)


def _keyed_payload(item: tuple[int, str], root: str, task: str, encoding: str, num_shards: int):
    """On a worker: ``(shard, (place in shard, record))`` for position ``p`` of the write order."""
    position, image_id = item
    payload = record_payload(root, image_id, task, encoding)
    return position % num_shards, (position // num_shards, payload)


def _write_shard(group: tuple[int, Iterable[tuple[int, bytes]]], temps: list[str], compression):
    """On a worker: one shard's records, in their order, to its hidden temporary file."""
    shard, numbered = group
    count = write_records(temps[shard], (p for _, p in sorted(numbered)), compression, True)
    return shard, count


def _pipeline_options(beam_options: list[str], verbose: bool):
    """The local runner, one worker process per core, then ``beam_options``."""
    from apache_beam.options.pipeline_options import PipelineOptions

    # FnApiRunner by name: DirectRunner 2.77 would first try Prism, a download from GitHub
    defaults = [
        "--runner=FnApiRunner",
        "--direct_running_mode=multi_processing",
        f"--direct_num_workers={os.cpu_count() or 1}",
    ]
    if not verbose:  # what the workers log once they have read their options
        defaults.append("--default_sdk_harness_log_level=ERROR")
    options = PipelineOptions([*defaults, *beam_options])
    try:
        with contextlib.redirect_stderr(io.StringIO()) as said:  # argparse's complaint
            known = options.get_all_options()
            unknown = set(options.get_all_options(retain_unknown_options=True)) - set(known)
    except SystemExit:  # argparse rejected a value
        reason = said.getvalue().rpartition("error: ")[2].strip() or "cannot be parsed"
        raise ValueError(f"Beam options {beam_options}: {reason}") from None
    if unknown:
        raise ValueError(f"unknown Beam option(s) {sorted(unknown)} in {beam_options}")
    return options


def convert_with_beam(
    voc_root: str | os.PathLike,
    split: str,
    out_prefix: str | os.PathLike,
    beam_options: Sequence[str] = (),
    verbose: bool = False,
    timeout: float | None = 3600,
    **options: object,
) -> list[Path]:
    """Write :func:`helpers.voc_records.convert_split`'s shards with the same ``options``, byte
    for byte, by an Apache Beam pipeline in a process of its own (notebook 14, "Keep the order";
    ``convert-voc --engine beam``); return their paths. FnApiRunner, a worker per core, unless
    ``beam_options`` say otherwise; every worker must see the folders. Raises as
    ``convert_split``, ValueError for a bad Beam option, RuntimeError if the pipeline fails
    (``verbose``: Beam's log), TimeoutError."""
    signature = inspect.signature(convert_split)  # its options and defaults: one list of them
    bound = signature.bind(voc_root, split, out_prefix, progress=False, **options)  # TypeError
    bound.apply_defaults()
    args = SimpleNamespace(**bound.arguments)
    check_task(args.task, args.encoding)
    paths = shard_paths(out_prefix, args.num_shards, args.compression, args.index)  # checks them
    if isinstance(beam_options, str) or not all(isinstance(o, str) for o in beam_options):
        raise TypeError(f"beam_options must be a list of strings, got {beam_options!r}")
    with output_folder(out_prefix), committing(paths, args.overwrite) as pairs:
        ids = split_order(voc_root, split, args.task, args.shuffle_seed)  # before Beam starts
        temps = [temp_path(p.absolute(), "beam") for p in paths]  # a worker may run elsewhere
        pairs += zip(temps, paths, strict=True)
        payload = [str(voc_root), args.task, args.encoding, args.num_shards]  # _keyed_payload's
        job = {
            "options": list(beam_options),
            "verbose": verbose,
            "ids": ids,
            "payload": payload,
            "temps": [str(t) for t in temps],
            "compression": args.compression,
        }
        _run_in_child(job, verbose, timeout)
        for temp in temps[len(ids) :]:  # shards that receive no record: valid empty files
            write_records(temp, [], args.compression)
        if args.index:  # each shard's two indexes, from one walk over its headers
            for temp, path in zip(temps, paths, strict=True):
                pairs += staged_index(path, np.diff(build_index(temp)), os.stat(temp))
    return paths


_CHILD = "import helpers.beam as b; b._child()"  # what the pipeline's process runs


def _run_in_child(job: dict, verbose: bool, timeout: float | None = None) -> None:
    """Run the pipeline in a fresh process group (Beam's state, logging and workers kept from
    the caller, e.g. IPython); raise what went wrong there, here."""
    env = {**os.environ, **{k: os.environ.get(k) or v for k, v in QUIET_ENVIRONMENT.items()}}
    with subprocess.Popen(
        [sys.executable, "-c", _CHILD],
        stdin=subprocess.PIPE,
        text=True,
        stdout=subprocess.PIPE,
        stderr=None if verbose else subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    ) as child:
        try:
            out, _ = child.communicate(json.dumps(job), timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise TimeoutError(f"the Beam pipeline did not finish within {timeout:g} s") from None
    if child.returncode == 0:
        return
    try:
        kind, message = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        kind = ""
        message = f"the Beam pipeline's process ended with status {child.returncode}"
    error = voc.VOCError if kind == "VOCError" else getattr(builtins, kind, RuntimeError)
    if not (isinstance(error, type) and issubclass(error, (OSError, ValueError, TypeError))):
        error = RuntimeError  # Beam's own failure; verbose=True shows its log
    raise error(message)


def _child() -> None:
    """In the child process: read the job from stdin, run it; on failure print [kind, message]."""
    job = json.load(sys.stdin)
    try:
        import apache_beam as beam

        with beam.Pipeline(options=_pipeline_options(job["options"], job["verbose"])) as pipeline:
            _ = (
                pipeline
                | "Number the ids" >> beam.Create(list(enumerate(job["ids"])))
                | "Serialize" >> beam.Map(_keyed_payload, *job["payload"])
                | "Group by shard" >> beam.GroupByKey()
                | "Write shards" >> beam.Map(_write_shard, job["temps"], job["compression"])
            )
    except Exception as error:
        found = _WORKER_ERROR.search(str(error))  # a worker's error, as text
        kind, message = found.group(1, 2) if found else (type(error).__name__, str(error))
        print(json.dumps(["VOCError" if kind.startswith("helpers.voc.") else kind, message]))
        sys.exit(1)
