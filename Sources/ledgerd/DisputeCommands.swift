import ArgumentParser
import Foundation
import LedgerAPI
import LedgerApp

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `ledgerd disputes list [--status S] [--due-before TIME] [--json]`: the disputes of a running
/// daemon (`GET /disputes`), one line each, soonest deadline first.
struct Disputes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Disputes and chargebacks, through a running daemon.", subcommands: [List.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List disputes (soonest deadline first).")
        @Option(help: "Only disputes in this status (inquiry, charged_back, defended, represented, reversed, pre_arbitration, …).")
        var status: String?
        @Option(help: "Only disputes whose deadline is before this RFC 3339 time.") var dueBefore: String?
        @Flag(help: "Print the reply as JSON.") var json = false
        @OptionGroup var connection: Order.Connection

        func run() async throws {
            var components = URLComponents()
            var query: [URLQueryItem] = []
            if let status { query.append(URLQueryItem(name: "status", value: status)) }
            if let dueBefore { query.append(URLQueryItem(name: "due_before", value: dueBefore)) }
            components.path = "/disputes"
            components.queryItems = query.isEmpty ? nil : query
            // `+` is a space in a query: spell it out (a time zone offset such as +02:00).
            let path = (components.string ?? "/disputes").replacingOccurrences(of: "+", with: "%2B")
            let (status, data) = try await connection.get(path)
            guard (200..<300).contains(status), let reply = try? WireJSON.decode(DisputeListReply.self, from: data) else {
                print(String(decoding: data, as: UTF8.self))
                throw ExitCode(1)
            }
            if json {
                print(String(decoding: data, as: UTF8.self))
                return
            }
            print(Self.table(reply))
        }

        /// One line per dispute under a header.
        static func table(_ reply: DisputeListReply) -> String {
            let header = ["DISPUTE", "ORDER", "STATUS", "REASON", "AMOUNT", "DUE"]
            let rows = reply.disputes.map { d in
                [d.dispute_id, d.order_id, d.status, "\(d.network) \(d.reason_code)", "\(d.amount) \(d.currency)", d.due_at ?? "-"]
            }
            if rows.isEmpty { return "no disputes" }
            let widths = header.indices.map { i in ([header] + rows).map { $0[i].count }.max() ?? 0 }
            func line(_ fields: [String]) -> String {
                fields.enumerated().map { i, f in f.padding(toLength: widths[i], withPad: " ", startingAt: 0) }.joined(separator: "  ")
            }
            return ([line(header)] + rows.map(line)).joined(separator: "\n")
        }
    }
}

extension Order.Connection {
    /// GETs `path` with the operator key; returns the status and the reply.
    func get(_ path: String) async throws -> (status: Int, body: Data) {
        var request = try request(path, data: Data(), contentType: "application/json")
        request.httpMethod = "GET"
        request.httpBody = nil
        request.setValue(nil, forHTTPHeaderField: "Content-Type")
        let (data, response) = try await Self.reaching(request) { [request] in try await URLSession.shared.data(for: request) }
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }
}
