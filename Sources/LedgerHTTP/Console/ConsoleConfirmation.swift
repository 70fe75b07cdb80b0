import Foundation
import HTTPTypes
import Hummingbird
import LedgerCore
import LedgerServices

// A confirmation page before every irreversible action (issue 55): a refund, accepting a chargeback, closing the
// business day before its cut-off. The action's form posts first without `confirmed`: its input is checked as the
// API checks it (a refusal is the form again with the error, nothing appended), and the page says what will happen,
// with the amounts. Its one button posts the very same fields (the refund's idempotency key included) with
// `confirmed=yes`; Cancel is a link back (a GET): nothing is appended until the second POST.

extension ConsoleRoutes {
    /// The confirmation page's view.
    struct ConfirmPage {
        let title: String
        let session: ConsolePages.SessionView
        /// What will happen, in one sentence.
        let what: String
        /// The amounts and references it concerns.
        let figures: [ConsolePages.Figure]
        /// Where the confirmed form posts: the action's own route.
        let action: String
        /// The action's fields, posted again as they were checked.
        let fields: [Field]
        let button: String
        /// Back to the page the action came from; nothing is recorded.
        let cancel: String
    }

    struct Field {
        let name: String
        let value: String
    }

    /// The form's value of `confirmed`: the second POST, from the confirmation page.
    static func isConfirmed(_ form: ConsoleForm) -> Bool { form["confirmed"] == "yes" }

    /// The confirmation page for `fields` of an action posting to `action`; the CSRF token is the session's.
    static func confirmation(
        _ signedIn: SignedIn,
        title: String,
        what: String,
        figures: [ConsolePages.Figure],
        action: String,
        fields: [(String, String)],
        button: String,
        cancel: String
    ) -> Response {
        let page = ConfirmPage(
            title: title,
            session: signedIn.view,
            what: what,
            figures: figures,
            action: action,
            fields: [Field(name: "csrf_token", value: signedIn.session.csrfToken)] + fields.map { Field(name: $0.0, value: $0.1) },
            button: button,
            cancel: cancel
        )
        return ConsolePages.render("confirm", page)
    }

    /// A refund's confirmation: the amount against what the order has captured and refunded so far, and the reason.
    func refundConfirmation(id: String, request: HoldOperationRequest, form: ConsoleForm, _ signedIn: SignedIn) async throws -> Response {
        guard let row = try await orders.orderJSON(id: id) else { throw APIError.notFound("no order \(id)") }
        let object = (try? JSONSerialization.jsonObject(with: Data(row.utf8))) as? [String: Any] ?? [:]
        let payment = object["payment"] as? [String: Any]
        let currency = object["currency"] as? String ?? ""
        let amount = request.amount ?? ""
        // The amount is checked before the page states it, as the service will (its codes and field): a page must not
        // offer to confirm what the ledger then refuses.
        if let code = Currency(code: currency) {
            guard let money = try? Money(decimal: amount, currency: code) else {
                throw ServiceError.invalid("invalid_amount", "amount must be a decimal string in \(currency) such as \"12.50\"", field: "amount")
            }
            guard money.minorUnits > 0 else {
                throw ServiceError.invalid("invalid_amount", "amount \(amount) \(currency) must be positive", field: "amount")
            }
            let captured = (payment?["captured"] as? String).flatMap { try? Money(decimal: $0, currency: code) }
            let refunded = (payment?["refunded"] as? String).flatMap { try? Money(decimal: $0, currency: code) }
            if let captured, let refunded, money.minorUnits > captured.minorUnits - refunded.minorUnits {
                throw ServiceError.invalid(
                    "exceeds_refundable",
                    "amount \(amount) \(currency) is more than the \(Money(minorUnits: captured.minorUnits - refunded.minorUnits, currency: code).decimalString) still refundable",
                    field: "amount"
                )
            }
        }
        return Self.confirmation(
            signedIn,
            title: "Confirm the refund",
            what: "Refund \(amount) \(currency) of order \(id) to the shopper's card. A refund cannot be taken back.",
            figures: [
                .init(label: "refund", value: "\(amount) \(currency)"),
                .init(label: "captured so far", value: "\(payment?["captured"] as? String ?? "—") \(currency)"),
                .init(label: "refunded so far", value: "\(payment?["refunded"] as? String ?? "—") \(currency)"),
                .init(label: "reason", value: request.reason ?? ""),
            ],
            action: Self.path("orders", id) + "/refund",
            fields: [("idempotency_key", form["idempotency_key"] ?? ""), ("amount", form["amount"] ?? ""), ("reason", form["reason"] ?? "")],
            button: "Refund \(amount) \(currency)",
            cancel: Self.path("orders", id)
        )
    }

    /// Accepting a chargeback's confirmation: the disputed amount stays with the cardholder, the dispute closes lost.
    func acceptConfirmation(id: String, _ signedIn: SignedIn) async throws -> Response {
        guard let view = try await disputes.dispute(id: id) else { throw APIError.notFound("no dispute \(id)") }
        let state = view.state
        return Self.confirmation(
            signedIn,
            title: "Confirm accepting the chargeback",
            what:
                "Accept dispute \(id) on order \(state.orderID.rawValue): the \(state.amount.description) disputed stays with the cardholder and the dispute closes as lost. It cannot be defended afterwards.",
            figures: [
                .init(label: "disputed", value: state.amount.description), .init(label: "charged back", value: state.chargedBack.description),
                .init(label: "status now", value: state.status.rawValue),
            ],
            action: Self.path("disputes", id) + "/accept",
            fields: [],
            button: "Accept the chargeback",
            cancel: Self.path("disputes", id)
        )
    }

    /// Closing the open business day now: which day, the cut-off it brings forward, and what happens to later captures.
    func closeNowConfirmation(_ signedIn: SignedIn) -> Response {
        let open = settlement.openBusinessDay()
        return Self.confirmation(
            signedIn,
            title: "Confirm closing the day now",
            what:
                "Close the open business day \(open.businessDate) now, before its cut-off: every capture and refund recorded until now settles in its batches, submitted to the acquirer at once; captures recorded later settle with the next business day. The early close is recorded as yours and cannot be undone.",
            figures: [
                .init(label: "business day", value: open.businessDate.description),
                .init(label: "scheduled cut-off", value: ConsolePages.time(open.cutOffAt)),
                .init(label: "closed at", value: "now (\(ConsolePages.time(clock())))"),
            ],
            action: "/console/settlements/run",
            fields: [("close_now", "true")],
            button: "Close \(open.businessDate) now",
            cancel: "/console/settlements"
        )
    }
}

extension ConsoleTemplates {
    /// An irreversible action's confirmation (``ConsoleRoutes/ConfirmPage``).
    static let confirm = """
        {{> head}}
        <h1>{{title}}</h1>
        <p id="confirm-what">{{what}}</p>
        <dl class="figures">
        {{#figures}}<dt>{{label}}</dt><dd>{{value}}</dd>
        {{/figures}}
        </dl>
        <form method="post" action="{{action}}" class="stack" id="confirm-form">
        {{#fields}}<input type="hidden" name="{{name}}" value="{{value}}">
        {{/fields}}
        <input type="hidden" name="confirmed" value="yes">
        <button type="submit" id="confirm-button">{{button}}</button>
        </form>
        <p><a href="{{cancel}}" id="confirm-cancel">Cancel: nothing is recorded</a></p>
        {{> foot}}
        """
}
