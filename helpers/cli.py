"""``python -m helpers convert-voc | verify | inspect | index``: notebook 12 runs verify and
inspect, notebook 14 convert-voc --engine beam, notebook 15 convert-voc --task detection."""

import argparse
import functools
import itertools
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from helpers._checks import check_compression
from helpers.describe import describe_file, format_record, format_summary, plural
from helpers.index import check_index, write_index
from helpers.records import RecordError, detect_compression, iter_records, verify

_DETECT = object()  # a non-string default: argparse passes string defaults through `type`
_say = functools.partial(print, flush=True)  # flushed, so that stdout and stderr stay in order


def _complain(line: str, status: int = 1) -> int:  # the line on stderr; the exit status
    print(line, file=sys.stderr, flush=True)
    return status


def _int_at_least(minimum: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not text.strip().isdecimal() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return int(text)

    return parse


def _compression(text: str) -> str | None:
    """GZIP, ZLIB or NONE, in any letter case, as :func:`check_compression` gives them."""
    try:
        return check_compression(None if text.upper() == "NONE" else text.upper())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected GZIP, ZLIB or NONE, got {text!r}") from None


def _intact(path: Path, asked: object, work: Callable[[Path, str | None], bool]) -> bool:
    """Whether ``work(path, compression)`` went well; if not, one line on stderr that says what
    went wrong, in the same words for every command."""
    compression = None
    try:
        compression = detect_compression(path) if asked is _DETECT else asked
        return work(path, compression)
    except BrokenPipeError:  # stdout's reader went away (``| head``): main stops quietly
        raise
    except (OSError, ValueError) as error:  # RecordError is a ValueError
        line = str(error)  # the helpers' own messages name the file
        if isinstance(error, RecordError):
            uncompressed = " of the uncompressed stream" if compression else ""
            where = f"{error.path}: record {error.index} at byte {error.offset}{uncompressed}"
            line = f"{where}: {error.reason}"
        elif isinstance(error, OSError) and error.strerror:  # the system's error: name its file
            line = f"{path}: {error.strerror}"
            if error.filename is not None and str(error.filename) != str(path):
                line = f"{path}: {error.filename}: {error.strerror}"
        _complain(line)
        return False


def _verify(args: argparse.Namespace) -> int:
    """Check every record of TFRecord files (both CRCs, complete framing): one ok line per intact
    file, one line on stderr per damaged file naming the record, its byte offset and what is
    wrong; then exit status 1."""

    def check(path: Path, compression: str | None) -> bool:
        how = f", {compression}" if compression else ""
        _say(f"{path}: ok, {plural(verify(path, compression), 'record')}{how}")
        return True

    intact = [path for path in args.files if _intact(path, args.compression, check)]
    if len(args.files) > 1:
        _say(f"{len(intact)} of {len(args.files)} files intact")
    return 0 if len(intact) == len(args.files) else 1


def _inspect(args: argparse.Namespace) -> int:
    """Count records and infer the features of TFRecord files (Example, SequenceExample or
    serialized tensors): for each feature its type, values per record and in how many records
    it is present; for tensors dtype and shape."""

    def describe(path: Path, compression: str | None) -> bool:
        if path != args.files[0]:
            _say("")
        summary = describe_file(path, compression)
        _say(format_summary(summary))
        if args.show is not None and args.show >= summary.num_records:
            only = f"the file has only {plural(summary.num_records, 'record')}"
            _complain(f"{path}: --show {args.show}: {only}")
            return False
        if args.show is not None:
            payload = next(itertools.islice(iter_records(path, compression), args.show, None))
            _say(f"record {args.show}: {format_record(payload)}")
        return True

    intact = [path for path in args.files if _intact(path, args.compression, describe)]
    return 0 if len(intact) == len(args.files) else 1


def _index(args: argparse.Namespace) -> int:
    """Write SHARD.index and SHARD.index.npy beside plain TFRecord shards (random access), every
    header checked; --check: compare the index with the shard, writing nothing."""

    def index(path: Path, compression: None) -> bool:  # plain: write_index refuses the others
        count = check_index(path) if args.check else write_index(path, sys.stderr.isatty())
        _say(f"{path}: {'index ok' if args.check else 'indexed'}, {plural(count[0], 'record')}")
        return True

    intact = [path for path in args.files if _intact(path, None, index)]
    return 0 if len(intact) == len(args.files) else 1


def _convert_voc(args: argparse.Namespace) -> int:
    """Convert a split of a VOC2012-layout folder into TFRecord shards
    PREFIX-00000-of-0000N.tfrecord, with a progress bar on stderr and a one-line summary.
    Existing outputs are replaced only with --overwrite."""
    if args.voc_root is not None and not args.voc_root.is_dir():
        return _complain(f"convert-voc: --voc-root {args.voc_root}: no such folder")
    if args.engine == "local" and (args.beam_option or args.verbose):
        return _complain("convert-voc: --beam-option and --verbose need --engine beam", 2)
    if args.index and args.compression:
        plain = "--index needs plain shards: compressed ones cannot be indexed"
        return _complain(f"convert-voc: {plain}", 2)
    try:
        paths = _convert(args)
    except FileExistsError as error:
        exists = str(error).split("; pass overwrite=True")[0]
        return _complain(f"convert-voc: {exists}; pass --overwrite to replace")
    except (OSError, ValueError) as error:  # VOCError and RecordError are ValueErrors
        return _complain(f"convert-voc: {error}")
    except RuntimeError as error:  # Beam's own failure; a local one is a bug: show its traceback
        if args.engine != "beam":
            raise
        failed = f"the Beam pipeline failed: {error} (--verbose shows Beam's log)"
        return _complain(f"convert-voc: {failed}")
    where = str(paths[0]) if len(paths) == 1 else f"{paths[0]} ... {paths[-1].name}"
    records = sum(verify(path, args.compression) for path in paths)  # as the shards read back
    size = sum(path.stat().st_size for path in paths)
    counts = f"{plural(records, 'record')} in {plural(len(paths), 'file')}, {size:,} bytes"
    _say(f"wrote split {args.split!r}: {counts}: {where}")
    return 0


def _convert(args: argparse.Namespace) -> list[Path]:
    """The shards that the engine ``args`` names wrote (Beam is imported only for its own)."""
    from helpers import voc, voc_records

    shared = ("num_shards", "encoding", "compression", "overwrite", "shuffle_seed", "task", "index")
    common = {name: getattr(args, name) for name in shared}  # what both engines take
    root = args.voc_root if args.voc_root is not None else voc.voc_root()
    if args.engine == "local":
        return voc_records.convert_split(
            root, args.split, args.out, progress=not args.quiet, **common
        )
    from helpers.beam import convert_with_beam

    beam = {"beam_options": args.beam_option, "verbose": args.verbose}
    return convert_with_beam(root, args.split, args.out, **beam, **common)


def _parser() -> argparse.ArgumentParser:
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    parser = argparse.ArgumentParser(
        prog=name if name == "tfrecord-helpers" else "python -m helpers",
        description="Convert, verify, inspect and index TFRecord files (the tutorials' helpers)",
        epilog="Exit status: 0 success, 1 a damaged file or a failed command, 2 bad usage.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, run: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
        summary = run.__doc__.split("\n")[0].split(" (")[0]  # in the list of commands
        sub = commands.add_parser(name, help=summary, description=run.__doc__)
        sub.set_defaults(run=run)
        return sub

    convert = command("convert-voc", _convert_voc)
    add = convert.add_argument
    root = "the VOC2012 folder (default: $VOC_ROOT if set, else the embedded sample)"
    add("--voc-root", type=Path, metavar="DIR", help=root)
    add("--split", required=True, metavar="NAME", help="train, val or trainval")
    add("--out", required=True, type=Path, metavar="PREFIX", help="output prefix: data/voc-train")
    shards = "how many shard files to write (default 1)"
    positive = _int_at_least(1, "a positive integer")
    add("--num-shards", "--shards", type=positive, default=1, metavar="N", help=shards)
    encoding = "raw: uint8 pixels; encoded: JPEG, PNG mask (default raw)"
    add("--encoding", choices=("raw", "encoded"), default="raw", help=encoding)
    compress = "compress the shards as TensorFlow does (default NONE)"
    add("--compression", type=_compression, metavar="GZIP|ZLIB|NONE", help=compress)
    task = (
        "segmentation: image/mask pairs (--encoding applies); detection: the JPEG and its "
        "Annotations/ID.xml boxes, Object Detection API keys (default segmentation)"
    )
    add("--task", choices=("segmentation", "detection"), default="segmentation", help=task)
    seed = "a random order fixed by N (default: the split's)"
    non_negative = _int_at_least(0, "a non-negative integer")
    add("--shuffle-seed", type=non_negative, metavar="N", help=seed)
    engine = "local: this process; beam: Apache Beam (default local)"
    add("--engine", choices=("local", "beam"), default="local", help=engine)
    beam = (
        "with --engine beam: passed to Beam's pipeline options, "
        "e.g. --beam-option=--runner=FlinkRunner (repeatable)"
    )
    add("--beam-option", action="append", default=[], metavar="OPTION", help=beam)
    add("--verbose", action="store_true", help="with --engine beam: Beam's logging")
    indexes = "also write each shard's two index files, as the index command does (plain shards)"
    add("--index", action="store_true", help=indexes)
    add("--overwrite", action="store_true", help="replace output shards that exist")
    add("--quiet", action="store_true", help="no progress bar")

    runs = {"verify": _verify, "inspect": _inspect, "index": _index}
    check, inspect, index = (command(name, run) for name, run in runs.items())
    for sub in (check, inspect, index):
        sub.add_argument("files", nargs="+", type=Path, metavar="FILE", help="the files")
    stored = "how FILE is stored (default: detected from its first bytes)"
    for sub in (check, inspect):
        sub.add_argument("--compression", type=_compression, default=_DETECT, help=stored)
    index.add_argument("--check", action="store_true", help="check the index, write nothing")
    record = _int_at_least(0, "a record index (0, 1, ...)")
    inspect.add_argument("--show", type=record, metavar="N", help="also print record N readably")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return its exit status. Expected problems: one line on stderr."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:  # --help (0) or a usage error (2, message already printed)
        return int(exit_.code or 0)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        return _complain("interrupted", 130)
    except BrokenPipeError:  # e.g. `... inspect big.tfrecord | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
