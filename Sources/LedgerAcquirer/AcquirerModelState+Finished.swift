import LedgerCore

/// A payment the model no longer needs in memory: its hold is not open and every approved capture and
/// refund of it is settled, so nothing but a later refund, a repeated request or a status inquiry can
/// touch it again. A host that keeps the model durable may take these out of the state
/// (``AcquirerModelState/takeFinishedPayments()``), store them, and put one back
/// (``AcquirerModelState/restore(_:)``) before applying anything that names it — the answers are the
/// same bytes as if it had never left. A declined authorization is one too (no hold, no modification): only a
/// repeated request, a reuse of its reference or a status inquiry can name it again.
public struct FinishedPayment: Hashable, Sendable, Codable {
    /// Our authorization (merchant) reference.
    public let reference: String
    /// The placed hold; nil for a declined authorization (absent from the stored JSON, so older rows read the same).
    var hold: Hold?
    /// The declined authorization; nil (absent) for a placed hold.
    var declined: StoredAuthorization?
    /// The payment's modifications, in the order they were made.
    var modifications: [StoredModification]

    /// Our references of the payment's modifications.
    public var modificationReferences: [String] { modifications.map(\.record.modificationReference) }
}

extension AcquirerModelState {
    /// The references of the finished payments (see ``FinishedPayment``), in order.
    public func finishedPaymentReferences() -> [String] {
        holds.keys.filter { isFinished($0) }.sorted()
    }

    /// True when the payment with our `reference` is in the state and finished (see ``FinishedPayment``): no later
    /// item of a batch being settled can change it (each of its captures and refunds is settled or cannot be).
    public func isFinished(_ reference: String) -> Bool {
        guard let hold = holds[reference], hold.status != .open else { return false }
        return hold.modificationReferences.allSatisfy { modificationReference in
            guard let modification = modifications[modificationReference] else { return true }
            let settles = modification.record.kind == .capture || modification.record.kind == .refund
            return !settles || !modification.response.responseCode.isApproved
                || (modification.settledInBatch != nil && !modification.carriedOver)
        }
    }

    /// How many payments in the state are no longer open (closed or expired): what a host that keeps the model
    /// durable may write out (``closedPaymentReferences(limit:)``) to bound its memory by the open holds. Declined
    /// authorizations count too (issue 57: they were kept for the whole day).
    public var closedResidentCount: Int { holds.count - openHolds.count + declined.count }

    /// Up to `limit` references of payments that are not open and hold no line back for the next batch (the
    /// move-to-next-batch fault: the next settlement marks that modification in the state), in order. Such a payment
    /// changes again only through a command or a batch item that names it, before which its host puts it back
    /// (``restore(_:)``): it may leave memory before it is settled, and answers the same when put back.
    public func closedPaymentReferences(limit: Int) -> [String] {
        var closed: [String] = []
        for reference in declined.keys {
            guard closed.count < limit else { return closed.sorted() }
            closed.append(reference)
        }
        for (reference, hold) in holds where hold.status != .open {
            guard closed.count < limit else { break }
            let carried = hold.modificationReferences.contains { modifications[$0]?.carriedOver == true }
            if !carried { closed.append(reference) }
        }
        return closed.sorted()
    }

    /// The payments with these references as they are now (those in the state), without taking them out: what a host
    /// stores before it takes them (``takeFinishedPayments(_:)``) once they are stored.
    public func payments(_ references: some Sequence<String>) -> [FinishedPayment] {
        references.compactMap { reference -> FinishedPayment? in
            if let stored = declined[reference] { return FinishedPayment(reference: reference, declined: stored, modifications: []) }
            return holds[reference].map { hold in
                FinishedPayment(reference: reference, hold: hold, modifications: hold.modificationReferences.compactMap { modifications[$0] })
            }
        }
    }

    /// Takes these payments (finished, from ``finishedPaymentReferences()``, or closed and stored, from
    /// ``closedPaymentReferences(limit:)``) out of the state, in order.
    public mutating func takeFinishedPayments(_ references: some Sequence<String>) -> [FinishedPayment] {
        var taken: [FinishedPayment] = []
        for reference in references {
            if let stored = declined.removeValue(forKey: reference) {
                taken.append(FinishedPayment(reference: reference, declined: stored, modifications: []))
                continue
            }
            guard let hold = holds.removeValue(forKey: reference) else { continue }
            let stored = hold.modificationReferences.compactMap { modifications.removeValue(forKey: $0) }
            taken.append(FinishedPayment(reference: reference, hold: hold, modifications: stored))
        }
        return taken
    }

    /// Gives back the storage of payments taken out (a dictionary keeps its capacity when emptied).
    public mutating func compactStorage() {
        if holds.capacity > 2 * holds.count + 1_024 { holds = holds.compacted() }
        if declined.capacity > 2 * declined.count + 1_024 { declined = declined.compacted() }
        if modifications.capacity > 2 * modifications.count + 1_024 { modifications = modifications.compacted() }
    }

    /// Puts a payment taken out by ``takeFinishedPayments()`` back (nothing when it is in the state).
    public mutating func restore(_ payment: FinishedPayment) {
        guard !knows(payment: payment.reference) else { return }
        if let stored = payment.declined { declined[payment.reference] = stored }
        holds[payment.reference] = payment.hold
        for modification in payment.modifications { modifications[modification.record.modificationReference] = modification }
    }

    /// True when the state knows `reference` as a payment (placed or declined).
    public func knows(payment reference: String) -> Bool { holds[reference] != nil || declined[reference] != nil }

    /// True when the state knows `reference` as a modification.
    public func knows(modification reference: String) -> Bool { modifications[reference] != nil }

    /// How many payments (placed holds), modifications and declined authorizations the state holds.
    public var residentCounts: (holds: Int, modifications: Int, declined: Int) { (holds.count, modifications.count, declined.count) }

    /// How many report lines the state holds (the service keeps them in its tables instead).
    public var reportLinesHeld: Int { batches.reduce(0) { $0 + $1.report.lines.count } }
}
