"""``python -m tools.demo --out data/demo`` (from the repository's root): write the demo workspace."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .model import SEED
from .writer import generate_demo


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.demo", description=generate_demo.__doc__)
    parser.add_argument("--out", required=True, help="workspace folder to write (e.g. data/demo)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"random seed (default {SEED})")
    args = parser.parse_args(argv)
    generate_demo(Path(args.out), seed=args.seed)
    print(f"wrote the demo workspace to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
