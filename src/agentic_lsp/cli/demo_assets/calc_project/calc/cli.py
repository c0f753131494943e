"""Command line: ``python -m calc.cli add 2 3``."""

import sys

from calc.ops import add, multiply

OPERATIONS = {"add": add, "multiply": multiply}


def main(argv: list[str]) -> int:
    name, left, right = argv
    print(OPERATIONS[name](float(left), float(right)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
