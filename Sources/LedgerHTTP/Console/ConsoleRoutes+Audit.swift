import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

// Audit, beyond the chain's verification: the signed checkpoints (each re-checked against the log as it is now), an
// order as of any past moment, the accounting journal of a day with its balance, and the log and the journal as files
// to download. Reads only (signing a checkpoint is an operator's), through the services the API reads through:
// `GET /audit/checkpoints`, `GET /orders/{id}?as_of=`, `GET /journal`, `GET /events`.

extension ConsoleRoutes {
    struct CheckpointRow {
        let position: Int64
        let hash: String
        let signedAt: String
        let publicKey: String
        /// The signature verifies against the key the checkpoint names.
        let signatureValid: Bool
        /// The log's event at the position still has the signed hash.
        let logMatches: Bool
        let signedBy: String
    }

    struct CheckpointsView {
        let rows: [CheckpointRow]
        let next: Int64?
        /// An operator's sign form (nil: an auditor, or no signing key).
        let sign: SignForm?
        let keyMissing: Bool
    }

    struct SignForm {
        let csrfToken: String
    }

    /// Checkpoints on a page of the audit page.
    static let checkpointsPageSize = 20

    /// The signed checkpoints after `after` (the log's `CheckpointSigned` events, oldest first), each re-checked: its
    /// signature against the key it names (an auditor compares that key with their own copy), and the log's event at
    /// its position against the hash it signed — a rewritten prefix shows here.
    func checkpointsView(after: Int64, _ signedIn: SignedIn) async throws -> CheckpointsView {
        let events = try await ledger.events(
            after: after,
            matching: EventFilter(types: [CheckpointSigned.eventType]),
            limit: Self.checkpointsPageSize
        )
        var rows: [CheckpointRow] = []
        for event in events {
            guard let signed = try? LedgerJSON.decode(CheckpointSigned.self, from: event.data) else { continue }
            let checkpoint = signed.checkpoint
            let key = Hex.decode(checkpoint.publicKey).flatMap { try? Curve25519.Signing.PublicKey(rawRepresentation: $0) }
            let signatureValid = key.map { CheckpointKeys.isValid(checkpoint, signedBy: $0) } ?? false
            let atPosition = try await ledger.events(after: checkpoint.position - 1, matching: EventFilter(), limit: 1).first
            rows.append(
                CheckpointRow(
                    position: checkpoint.position,
                    hash: checkpoint.hash,
                    signedAt: checkpoint.signedAt,
                    publicKey: checkpoint.publicKey,
                    signatureValid: signatureValid,
                    logMatches: atPosition.map { $0.position == checkpoint.position && Hex.encode($0.hash) == checkpoint.hash } ?? false,
                    signedBy: (try? LedgerJSON.decode(EventMetadata.self, from: event.metadata))?.actor ?? ""
                )
            )
        }
        let next = events.count == Self.checkpointsPageSize ? events.last?.position : nil
        let sign = signedIn.isOperator && checkpoints != nil ? SignForm(csrfToken: signedIn.session.csrfToken) : nil
        return CheckpointsView(rows: rows, next: next, sign: sign, keyMissing: checkpoints == nil)
    }

    /// `POST /console/audit/checkpoints`: an operator signs the head now (the API's `POST /audit/checkpoints`).
    func signCheckpoint(_ signedIn: SignedIn) async throws -> Response {
        guard let checkpoints else {
            throw APIError.conflict("checkpoint_key_missing", "no signing key is configured (LEDGERD_CHECKPOINT_KEY)")
        }
        let checkpoint: Checkpoint
        do { checkpoint = try await checkpoints.signCheckpoint(actor: signedIn.principal.actor) } catch let error as ServiceError {
            throw APIError(error)
        }
        return ConsolePages.seeOther("/console/audit?signed=\(checkpoint.position)")
    }

    // MARK: As of

    struct AsOfPage {
        let title = "Order as of a moment"
        let session: ConsolePages.SessionView
        var order = ""
        var at = ""
        var position = ""
        var orderError: ConsolePages.ErrorView?
        var atError: ConsolePages.ErrorView?
    }

    /// `GET /console/audit/as-of?order=&at=` (`at`: a `datetime-local` value, read as UTC, or an RFC 3339 time) or
    /// `&position=`: the order as it stood then (`GET /orders/{id}?as_of=`'s reader), shown on the order's page with
    /// its history up to that point and no action. Without `order`: the form.
    func asOf(_ request: Request, _ signedIn: SignedIn) async throws -> Response {
        let query = request.uri.queryParameters
        var page = AsOfPage(session: signedIn.view)
        page.order = (query["order"].map(String.init) ?? "").trimmingCharacters(in: .whitespaces)
        page.at = query["at"].map(String.init) ?? ""
        page.position = (query["position"].map(String.init) ?? "").trimmingCharacters(in: .whitespaces)
        guard !page.order.isEmpty || !page.at.isEmpty || !page.position.isEmpty else { return ConsolePages.render("as-of", page) }
        guard !page.order.isEmpty else {
            page.orderError = .init(code: "invalid_parameter", message: "give the order's id")
            return ConsolePages.render("as-of", page, status: .badRequest)
        }
        let point: AsOf
        if !page.position.isEmpty {
            guard let position = Int64(page.position), position >= 0 else {
                page.atError = .init(code: "invalid_parameter", message: "position must be an integer in 0…\(Int64.max)")
                return ConsolePages.render("as-of", page, status: .badRequest)
            }
            point = .position(position)
        } else if let micros = Self.utcMoment(page.at) {
            point = .time(micros: micros)
        } else {
            page.atError = .init(code: "invalid_parameter", message: "give a moment (UTC), e.g. 2026-11-21T09:30, or a position")
            return ConsolePages.render("as-of", page, status: .badRequest)
        }
        guard let answer = try await state.order(page.order, asOf: point) else {
            page.orderError = .init(code: "not_found", message: "no order \(page.order) at \(point)")
            return ConsolePages.render("as-of", page, status: .notFound)
        }
        let through = answer.asOf?.position ?? Int64.max
        let history = try await ledger.orderHistory(page.order).filter { $0.position <= through }
        let moment = answer.asOf.map { "position \($0.position), \(RFC3339.format($0.micros))" } ?? "\(point)"
        var view = ConsolePages.orderPage(
            id: page.order,
            rowJSON: answer.json,
            history: history,
            session: signedIn.view,
            actions: nil,
            notice: "As it stood at \(moment): the events after it are not shown."
        )
        view.title = "Order \(page.order) as of \(point)"
        return ConsolePages.render("order", view)
    }

    /// Microseconds since the epoch of a `datetime-local` value read as UTC (`2026-11-21T09:30`, seconds optional) or of
    /// an RFC 3339 time; nil for anything else.
    static func utcMoment(_ text: String) -> Int64? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let micros = RFC3339.micros(trimmed) { return micros }
        let parts = trimmed.split(separator: "T", omittingEmptySubsequences: false)
        guard parts.count == 2, let day = utcDay(String(parts[0])) else { return nil }
        let clock = parts[1].split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(clock.count), clock.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }),
            let hour = Int64(clock[0]), let minute = Int64(clock[1]), (0..<24).contains(hour), (0..<60).contains(minute)
        else { return nil }
        let second = clock.count == 3 ? Int64(clock[2]) : 0
        guard let second, (0..<60).contains(second) else { return nil }
        return day.epochMicroseconds + ((hour * 60 + minute) * 60 + second) * 1_000_000
    }

    // MARK: Journal

    struct JournalLineRow {
        let account: String
        let name: String
        let debit: String
        let credit: String
    }

    struct JournalRow {
        let position: Int64
        let recordedAt: String
        let eventType: String
        let reference: String
        let currency: String
        let lines: [JournalLineRow]
        let balanced: Bool
    }

    struct BalanceRow {
        let currency: String
        let debit: String
        let credit: String
        let balanced: Bool
    }

    struct JournalPage {
        let title = "Journal"
        let session: ConsolePages.SessionView
        var day = ""
        var dayError: ConsolePages.ErrorView?
        var rows: [JournalRow] = []
        var balances: [BalanceRow] = []
        var next: String?
        var shown = false
    }

    /// Journal events on a page (entries and their context).
    static let journalPageEvents = 500

    /// `GET /console/audit/journal?day=YYYY-MM-DD&after=`: the accounting journal of a UTC day (`GET /journal`'s
    /// reader), a page of entries with their lines, and the page's debits and credits by currency with whether they
    /// balance; the day's CSV and JSONL for download.
    func journalPage(_ request: Request, _ signedIn: SignedIn) async throws -> Response {
        let query = request.uri.queryParameters
        var page = JournalPage(session: signedIn.view)
        page.day = query["day"].map(String.init) ?? ""
        guard !page.day.isEmpty else { return ConsolePages.render("journal", page) }
        guard let start = Self.utcDay(page.day) else {
            page.dayError = Self.dayError("day")
            return ConsolePages.render("journal", page, status: .badRequest)
        }
        let after: Int64
        do {
            after = try AuditRoutes.integer(query["after"].map(String.init), name: "after", default: 0, range: 0...Int64.max)
        } catch let error as APIError {
            page.dayError = .init(code: error.code, message: error.message)
            return ConsolePages.render("journal", page, status: error.status)
        }
        let result = try await journal.page(
            fromMicros: start.epochMicroseconds,
            toMicros: start.epochMicroseconds + 86_400_000_000,
            after: after,
            limit: Self.journalPageEvents
        )
        var sums: [String: (currency: Currency, debit: Int64, credit: Int64)] = [:]
        page.rows = result.entries.map { entry in
            var sum = sums[entry.currency.code] ?? (entry.currency, 0, 0)
            sum.debit += entry.totalDebitMinorUnits
            sum.credit += entry.totalCreditMinorUnits
            sums[entry.currency.code] = sum
            return JournalRow(
                position: entry.position,
                recordedAt: RFC3339.format(entry.recordedAtMicros),
                eventType: entry.eventType,
                reference: entry.reference,
                currency: entry.currency.code,
                lines: entry.lines.map {
                    JournalLineRow(
                        account: $0.account.code,
                        name: $0.account.name,
                        debit: $0.debitMinorUnits == 0 ? "" : ConsoleChart.decimal($0.debitMinorUnits, entry.currency),
                        credit: $0.creditMinorUnits == 0 ? "" : ConsoleChart.decimal($0.creditMinorUnits, entry.currency)
                    )
                },
                balanced: entry.isBalanced
            )
        }
        page.balances = sums.sorted { $0.key < $1.key }.map {
            BalanceRow(
                currency: $0.key,
                debit: ConsoleChart.decimal($0.value.debit, $0.value.currency),
                credit: ConsoleChart.decimal($0.value.credit, $0.value.currency),
                balanced: $0.value.debit == $0.value.credit
            )
        }
        page.next = result.nextAfter.map { "/console/audit/journal?day=\(page.day)&after=\($0)" }
        page.shown = true
        return ConsolePages.render("journal", page)
    }

    /// `GET /console/audit/journal.csv?day=` and `journal.jsonl?day=`: the day's whole journal as a file (the columns of
    /// `ledgerd journal export`), streamed a page at a time.
    func journalExport(_ request: Request, jsonl: Bool) throws -> Response {
        let dayText = request.uri.queryParameters["day"].map(String.init) ?? ""
        guard let start = Self.utcDay(dayText) else {
            throw APIError.badRequest("invalid_parameter", "day must be a day, e.g. 2026-11-21", field: "day")
        }
        let journal = self.journal
        let name = "journal-\(dayText).\(jsonl ? "jsonl" : "csv")"
        return Self.download(name: name, type: jsonl ? "application/x-ndjson" : "text/csv; charset=utf-8") { write in
            if !jsonl { try await write(JournalExport.csvHeader) }
            var after: Int64 = 0
            while true {
                let page = try await journal.page(
                    fromMicros: start.epochMicroseconds,
                    toMicros: start.epochMicroseconds + 86_400_000_000,
                    after: after,
                    limit: 5_000
                )
                let text = page.entries.map { jsonl ? JournalExport.jsonl($0) : JournalExport.csv($0, .spreadsheetSafe) }.joined()
                if !text.isEmpty { try await write(text) }
                guard let next = page.nextAfter else { break }
                after = next
            }
        }
    }

    /// The most positions one events export holds.
    static let maximumExportPositions: Int64 = 1_000_000

    /// `GET /console/audit/events.jsonl?from=&to=`: the log's events of positions `from`…`to` (at most
    /// ``maximumExportPositions``) as JSON lines, each as `GET /events` writes it, streamed a page at a time.
    func eventsExport(_ request: Request) throws -> Response {
        let query = request.uri.queryParameters
        let from = try AuditRoutes.integer(query["from"].map(String.init), name: "from", default: 1, range: 1...Int64.max)
        let to = try AuditRoutes.integer(query["to"].map(String.init), name: "to", default: Int64.max, range: 1...Int64.max)
        guard from <= to else { throw APIError.badRequest("invalid_parameter", "from must not be after to", field: "from") }
        let (span, overflow) = to.subtractingReportingOverflow(from)
        guard !overflow, span < Self.maximumExportPositions || query["to"] == nil else {
            throw APIError.badRequest("range_too_large", "an export holds at most \(Self.maximumExportPositions) positions", field: "to")
        }
        let (cap, past) = from.addingReportingOverflow(Self.maximumExportPositions - 1)
        let last = min(to, past ? Int64.max : cap)
        let ledger = self.ledger
        return Self.download(name: "events-\(from)-\(last).jsonl", type: "application/x-ndjson") { write in
            var after = from - 1
            while after < last {
                let events = try await ledger.events(after: after, matching: EventFilter(), limit: 1_000).filter { $0.position <= last }
                guard let end = events.last?.position else { break }
                try await write(events.map { EventJSON.render($0) + "\n" }.joined())
                after = end
            }
        }
    }

    /// A file to download, `name`d, streamed in the parts `write` makes.
    static func download(
        name: String,
        type: String,
        _ write: @escaping @Sendable (_ part: (String) async throws -> Void) async throws -> Void
    ) -> Response {
        streamedResponse(contentType: type, headers: [.contentDisposition: "attachment; filename=\"\(name)\""], write)
    }
}
