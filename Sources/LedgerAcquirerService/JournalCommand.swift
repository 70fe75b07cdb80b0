import LedgerAcquirer
import LedgerAcquirerAPI
import LedgerAcquirerClient
import LedgerCore

import struct Foundation.Data
import struct Foundation.Date

/// One command of the acquirer's journal: everything that can change the model, as the model applies it.
/// Authorisations carry their card already resolved, so the journal never holds a card number.
public enum JournalCommand: Hashable, Sendable, Codable {
    case authorize(AuthorizationCommand)
    case increment(IncrementRequest)
    case capture(CaptureRequest)
    case reverse(ReversalRequest)
    case refund(RefundRequest)
    /// Expiry of the holds due at the command's time, journalled when a read would first apply it.
    case expire
    /// A settlement batch whose items are the uploaded pages `0 ..< pages` (acquirer.batch_pages).
    case settle(SettlementBatchHeader, pages: Int)

    /// What makes two requests under one idempotency key "the same": the command, except that an
    /// authorisation's issuer answer (which depends on the day, e.g. an expired card) is left out.
    var fingerprint: String {
        var normalized = self
        if case .authorize(var command) = self {
            command.card.issuerResponse = .approved
            normalized = .authorize(command)
        }
        return (try? LedgerJSON.string(normalized)) ?? ""
    }
}

/// An answer as the service sends it: the HTTP status and the canonical JSON body. Journalled with its
/// command, so a retry under the same idempotency key gets these bytes again.
public struct AcquirerReply: Hashable, Sendable {
    public var status: Int
    public var body: Data

    public init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }

    static func answer(_ value: some Encodable) -> AcquirerReply {
        do { return AcquirerReply(status: 200, body: try LedgerJSON.encode(value)) } catch {
            return refusal(AcquirerError(.invalidRequest, "the answer could not be encoded"))
        }
    }

    static func refusal(_ error: AcquirerError) -> AcquirerReply {
        let body = (try? LedgerJSON.encode(AcquirerWireError(error))) ?? Data()
        return AcquirerReply(status: AcquirerWireError.status(of: error.code), body: body)
    }

    static let noContent = AcquirerReply(status: 204, body: Data())
}

extension AcquirerModelState {
    /// Applies one journalled command at `now` (pure: the same state, command and time give the same
    /// state and reply, which is what makes replay exact). A settlement is applied page by page by
    /// ``DurableAcquirerModel`` (its items are in acquirer.batch_pages), never here.
    mutating func apply(_ command: JournalCommand, now: Date) -> AcquirerReply {
        do throws(AcquirerError) {
            switch command {
            case .authorize(let c): return .answer(try authorize(c, now: now))
            case .increment(let r): return .answer(try increment(r, now: now))
            case .capture(let r): return .answer(try capture(r, now: now))
            case .reverse(let r): return .answer(try reverse(r, now: now))
            case .refund(let r): return .answer(try refund(r, now: now))
            case .expire:
                expireHolds(now: now)
                return .noContent
            case .settle(let header, _):
                throw AcquirerError(.invalidRequest, reference: header.batchReference, "a settlement is applied from its pages")
            }
        } catch {
            return .refusal(error)
        }
    }
}
