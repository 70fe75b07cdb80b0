import ArgumentParser
import Foundation
import LedgerAPI
import LedgerApp
import LedgerCore

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

        func validate() throws {
            if let status, Components.Schemas.DisputeStatus(rawValue: status) == nil {
                throw ValidationError("--status is one of " + Components.Schemas.DisputeStatus.allCases.map(\.rawValue).joined(separator: ", "))
            }
            if let dueBefore, RFC3339.micros(dueBefore) == nil { throw ValidationError("--due-before is an RFC 3339 time") }
        }

        func run() async throws {
            let query = Operations.ListDisputes.Input.Query(
                status: status.flatMap(Components.Schemas.DisputeStatus.init(rawValue:)),
                dueBefore: dueBefore.flatMap(RFC3339.micros).map { Date(timeIntervalSince1970: TimeInterval($0) / 1_000_000) }
            )
            let answer: Answer<Components.Schemas.DisputeList> = try await connection.withClient { client in
                switch try await client.listDisputes(query: query) {
                case .ok(let ok): .ok(try ok.body.json)
                case .badRequest(let refusal): .refused(400, refusal)
                case .unauthorized(let refusal): .refused(401, refusal)
                case .undocumented(let status, let payload): .undocumented(status: status, payload.body)
                }
            }
            guard case .ok(let reply) = answer else { try await answer.fail() }
            print(json ? try WireJSON.encode(reply) : Self.table(reply.disputes))
        }

        /// One line per dispute under a header.
        static func table(_ disputes: [Components.Schemas.Dispute]) -> String {
            let header = ["DISPUTE", "ORDER", "STATUS", "REASON", "AMOUNT", "DUE"]
            let rows = disputes.map { d in
                [d.disputeId, d.orderId, d.status.rawValue, "\(d.network) \(d.reasonCode)", "\(d.amount) \(d.currency)", d.dueAt ?? "-"]
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
