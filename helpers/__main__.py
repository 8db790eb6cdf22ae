"""``python -m helpers COMMAND ...``: the command line of :mod:`helpers.cli`."""

from helpers.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
