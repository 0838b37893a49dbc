#!/usr/bin/env python3
"""Summary statistics of sales: reads {"sales": [...]} on stdin, writes JSON."""

import json
import sys


def main() -> None:
    args = json.load(sys.stdin)
    sales = [float(s) for s in args.get("sales", [])]
    total = sum(sales)
    json.dump(
        {
            "count": len(sales),
            "total": total,
            "mean": total / len(sales) if sales else 0.0,
            "max": max(sales) if sales else None,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
