#!/usr/bin/env python3
"""The independent reader of the bank statement fixtures (issue 53): Python's `mt940` (B2CK, 0.8.1) and `bai2`
(Ministry of Justice, 0.15.0), pinned in .ci/run, read the MT940 and BAI2 files the ledger's Swift readers read, and
print every entry as JSON; BankReferenceReaderTests (Tests/LedgerBankTests) compares them entry by entry.

  bank_reference.py mt940 FILE     one file's statements and entries, JSON on stdout
  bank_reference.py bai2 FILE
  bank_reference.py --all DIR      every *.sta and *.bai in DIR read (.ci/run: the libraries accept every fixture)

Normalizations, each the library's convention against the ledger's, nothing else:
- MT940 `NONREF` ("no reference") is no reference (the ledger reads it as none);
- amounts are printed as the library gives them: MT940 a decimal (Decimal, negative for D and RC), BAI2 integer minor
  units with the sign of the library's own credit/debit classification of the type code;
- a BAI2 entry's value date is its V-funds-type date when it has one, else the group's as-of date.
"""
import json
import pathlib
import sys

import bai2.bai2
import mt940


def read_mt940(path):
    statements = []
    for statement in mt940.MT940(str(path)).statements:
        entries = []
        for t in statement.transactions:
            reference = t.reference.strip()
            entries.append({
                "amount": str(t.amount),
                "value_date": t.date.isoformat(),
                "booking_date": t.booking.isoformat() if t.booking else None,
                "reference": None if reference in ("", "NONREF") else reference,
                "bank_reference": t.institution_reference.strip() or None,
            })
        statements.append({
            "account": statement.account.strip(),
            "currency": statement.start_balance.currency if statement.start_balance else None,
            "entries": entries,
        })
    return statements


def read_bai2(path):
    statements = []
    with open(path) as f:
        document = bai2.bai2.parse_from_file(f)
    for group in document.children:
        as_of = group.header.as_of_date
        for account in group.children:
            entries = []
            for t in account.children:
                credit = t.type_code.transaction.value == "credit"
                value_date = as_of
                if t.availability and "date" in t.availability and t.availability["date"]:
                    value_date = t.availability["date"]
                entries.append({
                    "amount": str(t.amount if credit else -t.amount),
                    "value_date": value_date.isoformat(),
                    "booking_date": as_of.isoformat(),
                    "reference": t.customer_reference or None,
                    "bank_reference": t.bank_reference or None,
                })
            statements.append({
                "account": account.header.customer_account_number,
                "currency": account.header.currency or group.header.currency,
                "entries": entries,
            })
    return statements


READERS = {"mt940": read_mt940, "bai2": read_bai2}


def main(argv):
    if len(argv) == 3 and argv[1] == "--all":
        files = sorted(pathlib.Path(argv[2]).glob("*.sta")) + sorted(pathlib.Path(argv[2]).glob("*.bai"))
        if not files:
            print(f"no MT940 (*.sta) or BAI2 (*.bai) fixtures in {argv[2]}", file=sys.stderr)
            return 1
        for path in files:
            statements = READERS["mt940" if path.suffix == ".sta" else "bai2"](path)
            count = sum(len(s["entries"]) for s in statements)
            print(f"{path.name}: {len(statements)} statements, {count} entries (Python mt940 {mt940.__version__} / bai2)")
        return 0
    if len(argv) != 3 or argv[1] not in READERS:
        print(__doc__, file=sys.stderr)
        return 2
    json.dump(READERS[argv[1]](argv[2]), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
