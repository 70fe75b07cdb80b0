import Foundation
import Hummingbird
import LedgerCore
import LedgerServices

/// Imports bank statement files (issue 53).
public protocol BankStatementImporter: Sendable {
    /// Imports every statement of a spooled file; `format` nil: detected. Refusals throw ``ServiceError``.
    func importStatements(_ upload: ReportUpload, format: String?, actor: String) async throws -> BankStatementService.ImportSummary
}

extension BankStatementService: BankStatementImporter {}

/// - operator key: `POST /bank/statements[?format=camt.053|camt.054|mt940|bai2]`, the raw file as the body (any media
///   type): streamed to a 0600 spool file, bounded by `LEDGERD_REPORT_MAX_BYTES` (413 once past it), read whole before
///   anything is appended (``BankStatementService``);
/// - operator key: `POST /bank/breaks/{id}/resolve {"reason": …}`: a clerk's note resolving a bank break, the same
///   service call as the console's form (``BankMatchingOperator/resolveBankBreak(id:reason:actor:)``).
public struct BankStatementRoutes: Sendable {
    let importer: any BankStatementImporter
    /// Resolves bank breaks (nil: the route is not served).
    let matching: (any BankMatchingOperator)?
    /// The largest upload (`LEDGERD_REPORT_MAX_BYTES`, shared with settlement reports).
    let limit: Int

    public init(importer: any BankStatementImporter, matching: (any BankMatchingOperator)? = nil, limit: Int) {
        self.importer = importer
        self.matching = matching
        self.limit = limit
    }

    public func registerChanges(on group: RouterGroup<LedgerRequestContext>) {
        group.post("/bank/statements") { [importer, limit] request, context -> Response in
            // The parameter first: a bad one is refused before the body is read.
            let format = request.uri.queryParameters["format"].map(String.init)
            _ = try BankStatementService.format(named: format)
            let upload: ReportUpload
            do { upload = try await ReportUpload.spool(request.body.map { $0.readableBytesView }, limit: limit) } catch is ReportUpload.TooLarge {
                throw SettlementRoutes.uploadTooLarge(limit, what: "the statement file")
            }
            defer { upload.remove() }
            return try jsonResponse(BankStatementImportReply(try await importer.importStatements(upload, format: format, actor: context.actor)))
        }
        guard let matching else { return }
        group.post("/bank/breaks/:id/resolve") { request, context -> Response in
            let id = try context.parameters.require("id")
            // The body's rules (present, not blank, at most 500 characters) are the reconciliation breaks' own.
            let reason = try await StrictJSON.decode(ResolutionBody.self, of: request).reason
            return try jsonResponse(BankBreakResolutionReply(try await matching.resolveBankBreak(id: id, reason: reason, actor: context.actor)))
        }
    }
}

/// `POST /bank/breaks/{id}/resolve`'s answer (the document's `BankBreakResolution`).
struct BankBreakResolutionReply: Encodable {
    let breakID: String
    let reason: String
    let resolvedBy: String

    enum CodingKeys: String, CodingKey {
        case breakID = "break_id"
        case reason
        case resolvedBy = "resolved_by"
    }

    init(_ resolved: BankBreakResolved) {
        breakID = resolved.breakID
        reason = resolved.reason
        resolvedBy = resolved.resolvedBy
    }
}

/// `POST /bank/statements`'s answer (the document's `BankStatementImport`).
struct BankStatementImportReply: Encodable {
    struct Statement: Encodable {
        let account: String
        let statementID: String
        let sequence: String
        let stream: String
        let currency: String
        let entries: Int
        let net: String
        let status: String
        let appendedEvents: Int

        enum CodingKeys: String, CodingKey {
            case account
            case statementID = "statement_id"
            case sequence, stream, currency, entries, net, status
            case appendedEvents = "appended_events"
        }
    }

    /// What the matching of payouts to deposits did in the same call.
    struct Matching: Encodable {
        let matched: Int
        let breaks: [String: Int]
        let resolved: Int
        let appended: Int
        let openBreaks: Int

        enum CodingKeys: String, CodingKey {
            case matched, breaks, resolved, appended
            case openBreaks = "open_breaks"
        }
    }

    let format: String
    let fileSHA256: String
    let statements: [Statement]
    let matching: Matching

    enum CodingKeys: String, CodingKey {
        case format
        case fileSHA256 = "file_sha256"
        case statements, matching
    }

    init(_ summary: BankStatementService.ImportSummary) {
        format = summary.format
        fileSHA256 = summary.fileSHA256
        statements = summary.statements.map {
            Statement(
                account: $0.account,
                statementID: $0.statementID,
                sequence: $0.sequence,
                stream: $0.stream,
                currency: $0.currency.code,
                entries: $0.entries,
                net: $0.net.decimalString,
                status: $0.status.rawValue,
                appendedEvents: $0.appended
            )
        }
        let pass = summary.matching
        matching = Matching(
            matched: pass.matched,
            breaks: pass.breaks,
            resolved: pass.resolved,
            appended: pass.appended,
            openBreaks: pass.openBreaks
        )
    }
}
