/// The journal as files for an ERP import: one row per line, amounts as decimal strings of the
/// entry's currency (never floating point), times in RFC 3339 UTC.
///
/// Columns (CSV header, JSONL keys): `position, event_type, recorded_at, effective_at, reference,
/// account, account_name, debit, credit, currency`. The lines of one entry share its position.
public enum JournalExport {
    public static let columns = [
        "position", "event_type", "recorded_at", "effective_at", "reference", "account", "account_name", "debit", "credit", "currency",
    ]

    /// One row's values, in ``columns`` order.
    public static func fields(_ entry: JournalEntry, _ line: JournalLine) -> [String] {
        [
            String(entry.position), entry.eventType, RFC3339.format(entry.recordedAtMicros), RFC3339.format(entry.effectiveAtMicros),
            entry.reference, line.account.code, line.account.name,
            Money(minorUnits: line.debitMinorUnits, currency: entry.currency).decimalString,
            Money(minorUnits: line.creditMinorUnits, currency: entry.currency).decimalString, entry.currency.code,
        ]
    }

    /// The CSV header line.
    public static var csvHeader: String { CSVWriter.record(columns, .exact) }

    /// An entry's CSV lines: `.exact` for an ERP import (`ledgerd journal export`), `.spreadsheetSafe` for people
    /// (the console's `journal.csv`: a cell starting with `=`, `+`, `-`, `@`, TAB or CR gets a leading `'`; amounts
    /// are plain decimals and stay as they are).
    public static func csv(_ entry: JournalEntry, _ cells: CSVWriter.Cells) -> String {
        entry.lines.map { CSVWriter.record(fields(entry, $0), cells) }.joined()
    }

    /// An entry's JSON lines (position a number, everything else a string).
    public static func jsonl(_ entry: JournalEntry) -> String {
        entry.lines.map { line in
            let values = fields(entry, line)
            var out = "{"
            for (index, (name, value)) in zip(columns, values).enumerated() {
                if index > 0 { out += "," }
                out += EventJSON.quote(name) + ":" + (name == "position" ? value : EventJSON.quote(value))
            }
            return out + "}\n"
        }.joined()
    }
}
