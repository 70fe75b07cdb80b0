import Foundation
import LedgerBank
import LedgerCore
import LedgerProcess
import Testing

/// The MT940 and BAI2 readers judged by independent ones: Python's `mt940` and `bai2` packages (pinned in .ci/run,
/// installed into .build/bank-venv) read the same fixtures through Tests/bank_reference.py, and every entry's amount,
/// value and booking dates and references must agree. Skipped, saying so, where the packages are not installed.
struct BankReferenceReaderTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The Python with both packages: LEDGERD_BANK_PYTHON, else the venv .ci/run makes; nil when neither imports them.
    static let python: String? = {
        let venv = root.appendingPathComponent(".build/bank-venv/bin/python").path
        let candidates: [String] = [ProcessInfo.processInfo.environment["LEDGERD_BANK_PYTHON"], venv].compactMap { $0 }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// One entry as both sides print it.
    struct Entry: Codable, Equatable, CustomStringConvertible {
        var amount: String
        var value_date: String
        var booking_date: String?
        var reference: String?
        var bank_reference: String?

        var description: String {
            "\(amount) value \(value_date) booked \(booking_date ?? "-") ref \(reference ?? "-") bank \(bank_reference ?? "-")"
        }
    }

    struct Statement: Codable, Equatable {
        var account: String
        var currency: String?
        var entries: [Entry]
    }

    /// The Python side: runs the script, stdout to a file (a pipe could fill), the exit polled, not waited for.
    static func reference(_ format: String, _ fixture: String, python: String) async throws -> [Statement] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("bank-reference-\(UUID().uuidString).json")
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("bank-reference-\(UUID().uuidString).log")
        defer {
            try? FileManager.default.removeItem(at: output)
            try? FileManager.default.removeItem(at: errors)
        }
        let child = try ChildProcessHandle.launch(
            python,
            [
                root.appendingPathComponent("Tests/bank_reference.py").path, format,
                BankStatementReaderTests.fixtures.appendingPathComponent(fixture).path,
            ],
            environment: ["PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"],
            standardOutput: .appending(output.path),
            standardError: .appending(errors.path)
        )
        let ended = await child.exited(within: .seconds(120))
        try #require(ended == .exit(0), "bank_reference.py \(format) \(fixture): \((try? String(contentsOf: errors, encoding: .utf8)) ?? "")")
        return try JSONDecoder().decode([Statement].self, from: Data(contentsOf: output))
    }

    /// The Swift side in the same shape: amounts as the library prints them (MT940 a decimal, BAI2 minor units).
    static func ours(_ format: BankStatementFormat, _ fixture: String) throws -> [Statement] {
        var statements: [Statement] = []
        for item in try BankStatementReaderTests.read(format, try BankStatementReaderTests.bytes(fixture)) {
            switch item {
            case .statement(let header): statements.append(Statement(account: header.account, currency: header.currency.code, entries: []))
            case .entry(let entry):
                statements[statements.count - 1].entries.append(
                    Entry(
                        amount: format == .bai2 ? String(entry.amount.minorUnits) : entry.amount.decimalString,
                        value_date: entry.valueDate?.description ?? "",
                        booking_date: entry.bookingDate?.description,
                        reference: entry.ownerReference,
                        bank_reference: entry.bankReference
                    )
                )
            case .end: break
            }
        }
        return statements
    }

    /// Python's Decimal prints `-10` for `-10,` and `500.00` for `500,00`: compared as exact minor units.
    static func minorUnits(_ amount: String, _ currency: String?) -> Int64? {
        guard let code = currency, let currency = Currency(code: code) else { return nil }
        return try? ReportNumber.money(amount, currency: currency).minorUnits
    }

    static func compare(_ format: BankStatementFormat, _ fixture: String, python: String) async throws {
        let theirs = try await reference(format.rawValue, fixture, python: python)
        let ours = try ours(format, fixture)
        try #require(theirs.count == ours.count, "\(fixture): Python reads \(theirs.count) statements, the ledger \(ours.count)")
        for (their, our) in zip(theirs, ours) {
            #expect(their.account == our.account)
            #expect(their.currency == our.currency)
            try #require(
                their.entries.count == our.entries.count,
                "\(fixture) \(our.account): entries \(their.entries.count) vs \(our.entries.count)"
            )
            for (index, (a, b)) in zip(their.entries, our.entries).enumerated() {
                let place = "\(fixture) \(our.account) entry \(index + 1): Python \(a), ledger \(b)"
                if format == .mt940 {
                    #expect(Self.minorUnits(a.amount, their.currency) == Self.minorUnits(b.amount, our.currency), "\(place)")
                } else {
                    #expect(a.amount == b.amount, "\(place)")
                }
                #expect(a.value_date == b.value_date, "\(place)")
                #expect(a.booking_date == b.booking_date, "\(place)")
                #expect(a.reference == b.reference, "\(place)")
                #expect(a.bank_reference == b.bank_reference, "\(place)")
            }
        }
    }

    @Test(
        .enabled(
            if: python != nil,
            "Python's mt940 and bai2 packages are not installed (.ci/run installs them into .build/bank-venv; or set LEDGERD_BANK_PYTHON)"
        )
    )
    func mt940AgreesWithPythonsMT940() async throws {
        try await Self.compare(.mt940, "mt940-statement.sta", python: try #require(Self.python))
    }

    @Test(
        .enabled(
            if: python != nil,
            "Python's mt940 and bai2 packages are not installed (.ci/run installs them into .build/bank-venv; or set LEDGERD_BANK_PYTHON)"
        )
    )
    func bai2AgreesWithPythonsBAI2() async throws {
        try await Self.compare(.bai2, "bai2-prior-day.bai", python: try #require(Self.python))
    }
}
