#!/usr/bin/env python3
"""Looks up the customer of a support ticket: reads {"ticket": {...}} on
stdin, writes the ticket with the account's name and tier, or fails (exit
1) when no account has the ticket's email."""

import json
import pathlib
import sys

ACCOUNTS = pathlib.Path(__file__).parent.parent / "fixtures" / "accounts.json"


def main() -> None:
    ticket = json.load(sys.stdin)["ticket"]
    accounts = json.loads(ACCOUNTS.read_text())
    account = accounts.get(ticket["email"])
    if account is None:
        sys.exit(f"no account for {ticket['email']}")
    json.dump({**ticket, **account}, sys.stdout)


if __name__ == "__main__":
    main()
