import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// Renders the console's pages (``ConsoleTemplates``) from view values: plain structs whose stored properties the
/// templates name. Every page is `text/html; charset=utf-8`; ``ConsoleMiddleware`` adds the security headers.
package enum ConsolePages {
    /// The signed-in part of every page's header: who, and the CSRF token of the sign-out form.
    struct SessionView {
        let actor: String
        let csrfToken: String
    }

    /// An error as the API states it: its stable code and its message, shown next to the field it names.
    struct ErrorView {
        let code: String
        let message: String
    }

    struct ErrorPage {
        let title: String
        let heading: String
        let code: String
        let message: String
        let back: String
        let backLabel: String
        let session: SessionView?
    }

    static func render(_ template: String, _ view: Any, status: HTTPResponse.Status = .ok) -> Response {
        guard let html = ConsoleTemplates.library.render(view, withTemplate: template) else {
            preconditionFailure("no console template \(template)")
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// A page streamed as it is made: `body` writes its parts in order, each a template rendered with its view, and the
    /// browser shows each part as it arrives (a settlement run's steps, a verification's), no script needed.
    static func streamed(
        _ body: @escaping @Sendable (_ write: (_ template: String, _ view: Any) async throws -> Void) async throws -> Void
    )
        -> Response
    {
        streamedResponse(contentType: "text/html; charset=utf-8") { write in
            try await body { template, view in
                guard let html = ConsoleTemplates.library.render(view, withTemplate: template) else {
                    preconditionFailure("no console template \(template)")
                }
                try await write(html)
            }
        }
    }

    /// An error page with the API's code and message (a 404, a refusal, an internal failure's opaque message).
    static func error(_ error: APIError, session: SessionView?) -> Response {
        let heading: String
        switch error.status {
        case .notFound: heading = "Not found"
        case .forbidden: heading = "Not allowed"
        case .unauthorized: heading = "Sign in first"
        default: heading = error.status.code >= 500 ? "The server failed" : "Refused"
        }
        let signIn = error.status == .unauthorized
        return render(
            "error",
            ErrorPage(
                title: heading,
                heading: heading,
                code: error.code,
                message: error.message,
                back: signIn ? "/console/sign-in" : "/console/today",
                backLabel: signIn ? "Sign in" : "Back to Today",
                session: signIn ? nil : session
            ),
            status: error.status
        )
    }

    /// A redirect after a form (303: the browser follows with a GET), or to sign in.
    static func seeOther(_ location: String, headers extra: HTTPFields = [:]) -> Response {
        var headers = extra
        headers[.location] = location
        return Response(status: .seeOther, headers: headers)
    }

    /// Page `page` (1, 2, …; a bad or missing one is the first) of `items`, `size` a page, and the next page's number
    /// when there is one: the lists a service reads whole (the disputes, a report's breaks) are shown a page at a time.
    package static func page<T>(_ items: [T], page text: String?, size: Int) -> (items: ArraySlice<T>, page: Int, next: Int?) {
        let count = max(1, (items.count + size - 1) / size)
        let page = min(max(1, text.flatMap { Int($0) } ?? 1), count)
        let start = (page - 1) * size
        let slice = items[min(start, items.count)..<min(start + size, items.count)]
        return (slice, page, page < count ? page + 1 : nil)
    }

    /// An instant as the pages show it: RFC 3339 in UTC, to the second.
    static func time(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}

// MARK: Orders

extension ConsolePages {
    struct Line {
        let name: String
        let quantity: String
        let unitPrice: String
        let lineTotal: String
    }

    struct Figure {
        let label: String
        let value: String
    }

    struct HoldView {
        let state: String
        let network: String
        let lastFour: String
        let expiresAt: String
    }

    struct TimelineRow {
        let position: Int64
        let recordedAt: String
        let type: String
        let stream: String
        let actor: String
        let data: String
        /// The event as a clerk reads it (``EventSentences``); `data` is its raw JSON, for auditors.
        let sentence: String
    }

    /// A reference a clerk quotes to the acquirer or the shopper: the PSP reference, the authorization code, the
    /// carrier's tracking number.
    struct Reference {
        let id: String
        let label: String
        let value: String
    }

    /// One action's form: its fresh idempotency key, what was typed (when it is shown again) and the errors by field.
    struct ActionForm {
        var idempotencyKey: String
        var amount = ""
        var reason = ""
        var carrier = ""
        var tracking = ""
        var formError: ErrorView?
        var amountError: ErrorView?
        var reasonError: ErrorView?
        var carrierError: ErrorView?
        var trackingError: ErrorView?

        init() { idempotencyKey = "console-" + ConsoleSessions.randomToken() }
    }

    /// The operator's actions the order's state allows (``HoldLifecycle/offered(order:hold:now:)``: a form only for an
    /// operation the service would not refuse for the state alone); absent for an auditor (no write action at all).
    struct Actions {
        var capture: ActionForm?
        var void: ActionForm?
        var refund: ActionForm?
        var ship: ActionForm?
        /// Whether the state allows no action (the page says so).
        var none: Bool { capture == nil && void == nil && refund == nil && ship == nil }

        init(offered: [HoldOperation]) {
            for operation in offered {
                if let kind = HoldOperationRequest.Kind(rawValue: operation.name) { self[kind] = ActionForm() }
            }
        }

        subscript(kind: HoldOperationRequest.Kind) -> ActionForm? {
            get {
                switch kind {
                case .capture: capture
                case .void: void
                case .refund: refund
                case .ship: ship
                case .increment: nil
                }
            }
            set {
                switch kind {
                case .capture: capture = newValue
                case .void: void = newValue
                case .refund: refund = newValue
                case .ship: ship = newValue
                case .increment: break
                }
            }
        }
    }

    struct OrderPage {
        var title: String
        let session: SessionView
        let csrfToken: String
        let id: String
        /// The order's console URL (``ConsoleRoutes/path(_:)``): the forms post to it and a suffix.
        let path: String
        let notice: String?
        let status: String
        let openedAt: String
        let currency: String
        let total: String
        let subtotal: String
        let tax: String
        let shipping: String
        let shippingMethod: String
        let lines: [Line]
        let hold: HoldView?
        let figures: [Figure]
        let actions: Actions?
        /// An operator's page for an order whose state allows no action.
        let noAction: Bool
        let events: [TimelineRow]
        let references: [Reference]
    }

    /// The order page from the order's read-model row (`GET /orders/{id}`'s `order`) and its history
    /// (`GET /orders/{id}/history`'s events).
    static func orderPage(
        id: String,
        rowJSON: String,
        history: [RecordedEvent],
        session: SessionView,
        actions: Actions?,
        notice: String?
    ) -> OrderPage {
        let row = (try? JSONSerialization.jsonObject(with: Data(rowJSON.utf8))) as? [String: Any] ?? [:]
        func text(_ object: [String: Any]?, _ key: String) -> String {
            guard let value = object?[key], !(value is NSNull) else { return "" }
            return "\(value)"
        }
        let lines = (row["lines"] as? [[String: Any]] ?? []).map {
            Line(name: text($0, "name"), quantity: text($0, "quantity"), unitPrice: text($0, "unit_price"), lineTotal: text($0, "line_total"))
        }
        let payment = row["payment"] as? [String: Any]
        let figures = ["authorized", "incremented", "captured", "reversed", "expired", "refunded", "open"].map {
            Figure(label: $0, value: text(payment, $0))
        }
        let hold = (row["hold"] as? [String: Any]).map {
            HoldView(state: text($0, "state"), network: text($0, "network"), lastFour: text($0, "last_four"), expiresAt: text($0, "expires_at"))
        }
        let events = history.map { event in
            // Who did it: the event metadata's actor, read with the log's own codec (as the dispute history reads it).
            let actor = (try? LedgerJSON.decode(EventMetadata.self, from: event.metadata))?.actor ?? ""
            return TimelineRow(
                position: event.position,
                recordedAt: time(event.recordedAt),
                type: event.type,
                stream: event.streamID.rawValue,
                actor: actor,
                data: event.data,
                sentence: EventSentences.sentence(type: event.type, data: event.data, actor: actor)
            )
        }
        // The tracking number is the last shipment's (the order's row does not keep it).
        var shipment: OrderShipped?
        for event in history where event.type == OrderShipped.eventType {
            shipment = (try? LedgerJSON.decode(OrderShipped.self, from: event.data)) ?? shipment
        }
        let holdRow = row["hold"] as? [String: Any]
        let references = [
            Reference(id: "psp", label: "PSP reference", value: text(row, "psp_reference")),
            Reference(id: "auth-code", label: "Authorization code", value: text(holdRow, "auth_code")),
            Reference(id: "tracking", label: "Tracking", value: [shipment?.carrier, shipment?.tracking].compactMap { $0 }.joined(separator: " ")),
        ].filter { !$0.value.isEmpty }
        return OrderPage(
            title: "Order \(id)",
            session: session,
            csrfToken: session.csrfToken,
            id: id,
            path: ConsoleRoutes.path("orders", id),
            notice: notice,
            status: text(row, "status"),
            openedAt: text(row, "opened_at"),
            currency: text(row, "currency"),
            total: text(row, "total"),
            subtotal: text(row, "subtotal"),
            tax: text(row, "tax"),
            shipping: text(row, "shipping"),
            shippingMethod: text(row, "shipping_method"),
            lines: lines,
            hold: hold,
            figures: figures,
            actions: actions,
            noAction: actions?.none ?? false,
            events: events,
            references: references
        )
    }
}
