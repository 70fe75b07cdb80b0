import Foundation
import LedgerCore
import LedgerMacros

/// What ``HoldWorkflow``'s steps need done for one operation on one order: reads, the call's note, the acquirer, the
/// writer. ``HoldOperationRun`` performs them on the ledger; a test performs them in memory (`LedgerServicesTests`),
/// so the loop below is tested without a database.
package protocol HoldActions: Sendable {
    /// The operation asked for, on the order and hold as read, with the reference the acquirer keys it by.
    func prepare() async throws -> HoldPreparation
    /// The order and its hold as they stand.
    func current() async throws -> (order: OrderState, hold: HoldState?)
    /// Notes the call before it is sent: if this process dies, or never hears the answer, recovery finds it.
    func note(_ call: HoldAcquirerCall) async throws
    func dropNote(_ call: HoldAcquirerCall) async
    func send(_ call: HoldAcquirerCall) async -> ModificationAttempt
    /// Records the answer (nil: nothing was sent) decided on `decidedOn` when given (else as the writer has them);
    /// returns how it went and, when recorded, the order and hold after it.
    func record(
        _ operation: HoldOperation,
        _ response: ModificationResponse?,
        checkingBalance: Bool,
        decidedOn: (order: OrderState, hold: HoldState)?
    ) async throws -> (HoldRecording, after: (order: OrderState, hold: HoldState?)?)
    /// Records the modifications the acquirer applied before `response` that the ledger lacks.
    func catchUp(before response: ModificationResponse) async throws
}

/// What ``HoldActions/prepare()`` read.
@MemberwiseInit
package struct HoldPreparation: Sendable {
    package var operation: HoldOperation
    package var order: OrderState?
    package var hold: HoldState?
    package var modificationReference: String
    package var now: Date
}

extension HoldActions {
    /// The operation from `first` on: performs each step ``HoldWorkflow`` decides until it answers (or fails, with a
    /// ``HoldFailure``). `operation`: what is recorded when `first` is not ``HoldStep/prepare`` (an answer the acquirer
    /// gave that the ledger is recording late).
    package func perform(
        from first: HoldStep,
        recording operation: HoldOperation? = nil
    ) async throws -> (
        answer: HoldAnswer, order: OrderState, hold: HoldState?
    ) {
        var step = first
        var operation = operation
        // The first recording is decided on the states prepared (nothing of this process moved them within the
        // order's turn, and a change by anyone else fails the append's version check); later ones as the writer has them.
        var decidedOn: (order: OrderState, hold: HoldState)?
        var after: (order: OrderState, hold: HoldState?)?
        var sent: HoldAcquirerCall?
        while true {
            switch step {
            case .prepare:
                let prepared = try await prepare()
                operation = prepared.operation
                if let order = prepared.order, let hold = prepared.hold { decidedOn = (order, hold) }
                step = HoldWorkflow.prepared(
                    prepared.operation,
                    order: prepared.order,
                    hold: prepared.hold,
                    modificationReference: prepared.modificationReference,
                    now: prepared.now
                )
            case .answerReplay:
                let now = try await current()
                return (.replayed(nil), now.order, now.hold)
            case .send(let call):
                try await note(call)
                sent = call
                step = HoldWorkflow.sent(await send(call))
            case .record(let response, let checkingBalance):
                guard let operation else { throw ServiceError.internalFailure }  // set by .prepare or given with the answer
                let (outcome, states) = try await record(operation, response, checkingBalance: checkingBalance, decidedOn: decidedOn)
                decidedOn = nil
                after = states
                step = HoldWorkflow.recorded(response, outcome: outcome, checkedBalance: checkingBalance)
            case .catchUp(let response):
                try await catchUp(before: response)
                step = HoldWorkflow.caughtUp(response)
            case .abandon(let failure):
                if let sent { await dropNote(sent) }
                throw failure
            case .fail(let failure): throw failure
            case .reply(let answer):
                if let sent { await dropNote(sent) }
                let states: (order: OrderState, hold: HoldState?)
                if let after { states = after } else { states = try await current() }
                return (answer, states.order, states.hold)
            }
        }
    }
}
