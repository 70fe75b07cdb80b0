import Foundation
import Hummingbird
import LedgerCore
import LedgerServices

// Every list of the console as a CSV file for the spreadsheet the clerk's manager wants (issue 55): the orders (with
// the list's filters), the disputes (with its status filter) and a batch's breaks, each written by the spreadsheet-safe
// `CSVWriter` (a cell a spreadsheet would run as a formula starts with `'`), streamed a page at a time.

extension ConsoleRoutes {
    /// The most orders one export holds (the list's reader pages through them).
    static let maximumExportOrders = 1_000_000

    /// `GET /console/orders.csv?status=&from=&to=`: the orders the list shows for the same filters, every page.
    func ordersExport(_ request: Request) throws -> Response {
        let parameters = request.uri.queryParameters
        var query = OrderQuery(status: nil, from: nil, to: nil, limit: 500, cursor: 0)
        if let status = parameters["status"].map(String.init), !status.isEmpty {
            guard OrderStatus(rawValue: status) != nil else {
                let names = OrderStatus.allCases.map(\.rawValue).sorted().joined(separator: ", ")
                throw APIError.badRequest("invalid_parameter", "status must be one of \(names)", field: "status")
            }
            query.status = status
        }
        for (name, end) in [("from", false), ("to", true)] {
            guard let text = parameters[Substring(name)].map(String.init), !text.isEmpty else { continue }
            guard let day = Self.utcDay(text) else {
                throw APIError.badRequest("invalid_parameter", "\(name) must be a day, e.g. 2026-11-21", field: name)
            }
            if end { query.to = day.addingTimeInterval(24 * 3600) } else { query.from = day }
        }
        let orders = self.orders
        let start = query
        return Self.download(name: "orders.csv", type: "text/csv; charset=utf-8") { write in
            try await write(CSVWriter.record(["order_id", "opened_at", "status", "total", "currency"], .spreadsheetSafe))
            var query = start
            var written = 0
            while written < Self.maximumExportOrders {
                let page = try await orders.orders(query)
                let rows = page.ordersJSON.compactMap(Self.orderRow)
                written += rows.count
                let text = rows.map { CSVWriter.record([$0.id, $0.openedAt, $0.status, $0.total, $0.currency], .spreadsheetSafe) }.joined()
                if !text.isEmpty { try await write(text) }
                guard let next = page.nextCursor else { break }
                query.cursor = next
            }
        }
    }

    /// `GET /console/disputes.csv?status=`: the disputes the queue lists, by deadline.
    func disputesExport(_ request: Request) async throws -> Response {
        let chosen = request.uri.queryParameters["status"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        let status = chosen.flatMap(DisputeStatus.init(rawValue:))
        if chosen != nil && status == nil {
            let known = DisputeStatus.allCases.map(\.rawValue).joined(separator: ", ")
            throw APIError.badRequest("invalid_parameter", "status must be one of \(known)", field: "status")
        }
        let disputes = try await self.disputes.list(status: status, dueBefore: nil).sorted {
            ($0.dueAt ?? .distantFuture, $0.disputeID) < ($1.dueAt ?? .distantFuture, $1.disputeID)
        }
        let text =
            CSVWriter.record(["dispute_id", "order_id", "status", "reason", "due_at", "amount", "currency"], .spreadsheetSafe)
            + disputes.map {
                CSVWriter.record(
                    [
                        $0.disputeID, $0.orderID.rawValue, $0.status.rawValue, Self.reason($0.reason), $0.dueAt.map(ConsolePages.time) ?? "",
                        $0.amount.decimalString, $0.amount.currency.code,
                    ],
                    .spreadsheetSafe
                )
            }.joined()
        return Self.download(name: "disputes.csv", type: "text/csv; charset=utf-8") { write in try await write(text) }
    }

    /// `GET /console/settlements/{id}/breaks.csv`: every report's breaks of the batch, open or resolved.
    func breaksExport(id: String) async throws -> Response {
        guard try await settlement.batch(id: id) != nil else { throw APIError.notFound("no settlement batch \(id)") }
        let view = try await settlement.reconciliation(id: id)
        var text = CSVWriter.record(
            ["report", "break_id", "class", "reference", "expected", "actual", "state", "resolution", "detail"],
            .spreadsheetSafe
        )
        for report in view?.reports ?? [] {
            for entry in report.breaks {
                let found = entry.found
                text += CSVWriter.record(
                    [
                        report.report ?? "acquirer", found.breakID, found.breakClass.rawValue, found.reference,
                        found.figure(found.expected, in: view!.currency) ?? "", found.figure(found.actual, in: view!.currency) ?? "",
                        entry.resolution == nil ? "open" : "resolved", entry.resolution?.reason ?? "", found.detail,
                    ],
                    .spreadsheetSafe
                )
            }
        }
        let body = text
        return Self.download(name: "breaks-\(id).csv", type: "text/csv; charset=utf-8") { write in try await write(body) }
    }
}
