import Foundation
import HTTPTypes
import Hummingbird
import LedgerAPI
import LedgerCore
import LedgerServices

/// The back-office console at `/console/`: server-rendered pages (``ConsoleTemplates``) over the same services the
/// back-office API reads and changes through — ``OrderReader``, ``LedgerReader`` (the order history of
/// `GET /orders/{id}/history`, the chain verification of `GET /audit/verify`), ``HoldService``, ``HoldReader``,
/// ``DisputeService`` and ``SettlementService``. The console has no SQL and no rule of its own: an action is the API's
/// operation, parsed by the API's parser (``HoldOperationRequest/parse(kind:body:)``, the defence's body), so a refusal
/// is the API's code and message.
///
/// Pages: `/console/sign-in`, `/console/today`, `/console/orders` (by id, or listed by status and day),
/// `/console/orders/{id}` (figures, hold, timeline; an operator's capture, void, refund and ship),
/// `/console/disputes` and `/console/disputes/{id}` (an operator's defend and accept), `/console/settlements` and
/// `/console/settlements/{id}` (an operator's resolution of a break, `POST /console/breaks/{id}/resolve`),
/// `/console/audit`.
///
/// Security (issue 32):
/// - sign-in exchanges an operator or auditor API key (checked by the ``APIKeyring``) for a session cookie
///   (``ConsoleSessions``): `HttpOnly`, `SameSite=Strict`, `Path=/console`, `Max-Age` of the session's life, and
///   `Secure` when the daemon serves TLS. Each request checks the session's key again, so revoking the key ends its
///   sessions;
/// - every POST form carries the session's CSRF token, and every POST is refused (403) without it; the sign-in form,
///   before any session, carries a token matched against a short-lived cookie of its own (double submit), so another
///   site cannot sign a browser in under its key;
/// - a change needs an operator's session: an auditor's pages show no action, and the server refuses an auditor's POST
///   anyway (403), appending nothing;
/// - ``ConsoleMiddleware`` sends a Content-Security-Policy without script or inline style on every console reply.
///
/// Search forms are GET (a read, bookmarkable): they carry no token, which would otherwise leak into URLs and logs.
public struct ConsoleRoutes: Sendable {
    static let sessionCookie = "ledgerd_console"
    static let signInCookie = "ledgerd_console_sign_in"
    /// The largest form body the console reads.
    static let maximumFormBytes = 16 * 1024
    /// The actions the order page offers an operator (an increment is an API matter for now).
    static let actionKinds: [HoldOperationRequest.Kind] = [.capture, .void, .refund, .ship]

    let keyring: APIKeyring
    let sessions: ConsoleSessions
    let orders: any OrderReader
    let ledger: any LedgerReader
    let holdOperator: HoldService
    let holds: any HoldReader
    let disputes: DisputeService
    let settlement: SettlementService
    /// What imports a bank statement file (the API's `POST /bank/statements`); nil: the console offers no upload.
    let bank: (any BankStatementImporter)?
    let privacy: PrivacyService
    let journal: JournalService
    let subscriptions: SubscriptionService
    let webhooks: WebhookService
    /// What answers an order as of a past moment (`GET /orders/{id}?as_of=`).
    let state: StateHistory
    /// What signs a checkpoint of the head (nil: no signing key is configured).
    let checkpoints: (CheckpointService)?
    /// The largest report upload (`LEDGERD_REPORT_MAX_BYTES`, as the API's).
    let reportLimit: Int
    /// Whether cookies are marked `Secure` (the daemon serves HTTPS).
    let secureCookies: Bool
    let clock: @Sendable () -> Date
    /// Where failed sign-ins are logged and counted, and what throttles sign-in per address.
    let failures: AuthenticationFailures?
    /// The matching of payouts to bank deposits (nil: the console shows no bank leg).
    let matching: (any BankMatchingOperator)?

    public init(
        keyring: APIKeyring,
        sessions: ConsoleSessions,
        orders: any OrderReader,
        ledger: any LedgerReader,
        holdOperator: HoldService,
        holds: any HoldReader,
        disputes: DisputeService,
        settlement: SettlementService,
        privacy: PrivacyService,
        journal: JournalService,
        subscriptions: SubscriptionService,
        webhooks: WebhookService,
        state: StateHistory,
        checkpoints: (CheckpointService)?,
        reportLimit: Int = 256 * 1024 * 1024,
        bank: (any BankStatementImporter)? = nil,
        secureCookies: Bool,
        clock: @escaping @Sendable () -> Date = { Date() },
        failures: AuthenticationFailures? = nil,
        matching: (any BankMatchingOperator)? = nil
    ) {
        self.keyring = keyring
        self.sessions = sessions
        self.orders = orders
        self.ledger = ledger
        self.holdOperator = holdOperator
        self.holds = holds
        self.disputes = disputes
        self.settlement = settlement
        self.privacy = privacy
        self.journal = journal
        self.subscriptions = subscriptions
        self.webhooks = webhooks
        self.state = state
        self.checkpoints = checkpoints
        self.reportLimit = reportLimit
        self.bank = bank
        self.secureCookies = secureCookies
        self.clock = clock
        self.failures = failures
        self.matching = matching
    }

    /// A request's signed-in session, its key checked again now.
    struct SignedIn {
        let token: String
        let session: ConsoleSessions.Session
        let principal: Principal

        var view: ConsolePages.SessionView { .init(actor: principal.actor, csrfToken: session.csrfToken) }
        var isOperator: Bool { principal.role == .operator }
    }

    /// `expensive`: the server's limit of expensive requests, applied to the console's verification, upload, as-of and
    /// journal pages and exports once the request is signed in (before: it passes on uncounted to its sign-in redirect).
    public func register(on router: Router<LedgerRequestContext>, expensive: ExpensiveRequestLimit? = nil) {
        let console = router.group("/console")
        if let expensive {
            console.add(middleware: ExpensiveRequestLimitMiddleware(expensive) { request, _ in signedIn(request)?.principal.keyID })
        }
        console.get("/") { request, _ in
            signedIn(request) == nil ? ConsolePages.seeOther("/console/sign-in") : ConsolePages.seeOther("/console/today")
        }
        console.get("/console.css") { _, _ in Self.asset(ConsoleTemplates.stylesheet, type: "text/css; charset=utf-8") }
        console.get("/favicon.svg") { _, _ in Self.asset(ConsoleTemplates.favicon, type: "image/svg+xml") }
        console.get("/sign-in") { request, _ in signInPage(request, error: nil) }
        console.post("/sign-in") { request, context in try await signIn(request, source: context.sourceAddress) }
        console.post("/sign-out") { request, _ in
            let (signedIn, _) = try await post(request)
            sessions.close(token: signedIn.token)
            return ConsolePages.seeOther("/console/sign-in", headers: [.setCookie: expiredCookie(Self.sessionCookie)])
        }
        console.get("/today") { request, _ in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            return try await today(signedIn, notice: request.uri.queryParameters["done"] == "resolve" ? "The resolution was recorded." : nil)
        }
        console.get("/orders") { request, _ in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            return try await findOrder(request, signedIn)
        }
        console.get("/orders.csv") { request, _ in
            guard signedIn(request) != nil else { return ConsolePages.seeOther("/console/sign-in") }
            return try ordersExport(request)
        }
        console.get("/disputes.csv") { request, _ in
            guard signedIn(request) != nil else { return ConsolePages.seeOther("/console/sign-in") }
            return try await disputesExport(request)
        }
        console.get("/settlements/:id/breaks.csv") { request, context in
            guard signedIn(request) != nil else { return ConsolePages.seeOther("/console/sign-in") }
            return try await breaksExport(id: try Self.id(context))
        }
        console.get("/orders/:id") { request, context in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            let id = try Self.id(context)
            let done = request.uri.queryParameters["done"].flatMap { HoldOperationRequest.Kind(rawValue: String($0)) }
            return try await orderPage(id: id, signedIn, notice: done.map { "The \($0.rawValue) was recorded." })
        }
        for kind in Self.actionKinds {
            console.post("/orders/:id/\(kind.rawValue)") { request, context in
                let (signedIn, form) = try await operatorPost(request)
                return try await perform(kind, id: try Self.id(context), form: form, signedIn)
            }
        }
        console.get("/disputes") { request, _ in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            return try await disputeQueue(request, signedIn)
        }
        console.get("/disputes/:id") { request, context in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            let done = request.uri.queryParameters["done"].map(String.init)
            let notice: String? =
                switch done {
                case "defend": "The defence was recorded."
                case "accept": "The acceptance was recorded."
                default: nil
                }
            return try await disputePage(id: try Self.id(context), signedIn, notice: notice)
        }
        for answer in ["defend", "accept"] {
            console.post("/disputes/:id/\(answer)") { request, context in
                let (signedIn, form) = try await operatorPost(request)
                return try await answerDispute(answer, id: try Self.id(context), form: form, signedIn)
            }
        }
        console.get("/settlements") { request, _ in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            return try await settlementList(request, signedIn)
        }
        console.get("/settlements/:id") { request, context in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            let notice: String? =
                switch request.uri.queryParameters["done"].map(String.init) {
                case "resolve": "The resolution was recorded."
                case "reconcile": "The report was reconciled: its breaks are below."
                default: nil
                }
            let breaksPage = request.uri.queryParameters["breaks_page"].map(String.init)
            let itemsAfter = request.uri.queryParameters["items_after"].map(String.init)
            return try await batchPage(id: try Self.id(context), signedIn, notice: notice, breaksPage: breaksPage, itemsAfter: itemsAfter)
        }
        console.get("/settlements/:id/report.csv") { request, context in
            guard signedIn(request) != nil else { return ConsolePages.seeOther("/console/sign-in") }
            return try await batchReportDownload(id: try Self.id(context))
        }
        console.get("/settlements/:id/items.csv") { request, context in
            guard signedIn(request) != nil else { return ConsolePages.seeOther("/console/sign-in") }
            return try await batchItemsDownload(id: try Self.id(context))
        }
        console.post("/settlements/run") { request, _ in
            let (signedIn, form) = try await operatorPost(request)
            return try await runSettlement(form: form, request, signedIn)
        }
        console.post("/reports") { request, _ in try await uploadReport(request) }
        console.post("/bank/statements") { request, _ in try await uploadStatement(request) }
        console.post("/breaks/:id/resolve") { request, context in
            let (signedIn, form) = try await operatorPost(request)
            return try await resolveBreak(id: try Self.id(context), form: form, signedIn)
        }
        console.post("/bank/breaks/:id/resolve") { request, context in
            let (signedIn, form) = try await operatorPost(request)
            return try await resolveBankBreak(id: try Self.id(context), form: form, signedIn)
        }
        console.get("/audit") { request, _ in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            return try await audit(request, signedIn)
        }
        console.post("/audit/checkpoints") { request, _ in
            let (signedIn, _) = try await operatorPost(request)
            return try await signCheckpoint(signedIn)
        }
        console.get("/audit/as-of") { request, _ in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            return try await asOf(request, signedIn)
        }
        console.get("/audit/journal") { request, _ in
            guard let signedIn = signedIn(request) else { return ConsolePages.seeOther("/console/sign-in") }
            return try await journalPage(request, signedIn)
        }
        console.get("/audit/journal.csv") { request, _ in
            guard signedIn(request) != nil else { return ConsolePages.seeOther("/console/sign-in") }
            return try journalExport(request, jsonl: false)
        }
        console.get("/audit/journal.jsonl") { request, _ in
            guard signedIn(request) != nil else { return ConsolePages.seeOther("/console/sign-in") }
            return try journalExport(request, jsonl: true)
        }
        console.get("/audit/events.jsonl") { request, _ in
            guard signedIn(request) != nil else { return ConsolePages.seeOther("/console/sign-in") }
            return try eventsExport(request)
        }
    }

    // MARK: Sessions

    func signedIn(_ request: Request) -> SignedIn? {
        guard let token = Self.cookie(Self.sessionCookie, of: request), let session = sessions.session(token: token) else { return nil }
        guard let principal = keyring.principal(forKeyID: session.principal.keyID, fingerprint: session.keyFingerprint) else {
            // The key was revoked, expired or replaced: its sessions end.
            sessions.close(token: token)
            return nil
        }
        return SignedIn(token: token, session: session, principal: principal)
    }

    /// A POST's session and form, after the checks every console POST passes: a session whose key is still in force
    /// (401), a form body (415, 413), and the session's CSRF token in it (403).
    func post(_ request: Request) async throws -> (SignedIn, ConsoleForm) {
        guard let signedIn = signedIn(request) else {
            throw APIError.unauthenticated("sign in to the console first: no session, or it ended")
        }
        let form = try await ConsoleForm.read(request, limit: Self.maximumFormBytes)
        guard let token = form["csrf_token"], ConsoleSessions.tokensEqual(token, signedIn.session.csrfToken) else {
            throw APIError(status: .forbidden, code: "csrf_token_invalid", message: "the form's CSRF token is missing or not this session's")
        }
        return (signedIn, form)
    }

    /// ``post(_:)`` of a write action: only an operator's session may (an auditor's is refused, 403, appending nothing,
    /// whatever the page showed it).
    func operatorPost(_ request: Request) async throws -> (SignedIn, ConsoleForm) {
        let (signedIn, form) = try await post(request)
        guard signedIn.isOperator else {
            throw APIError(status: .forbidden, code: "forbidden", message: "this action needs an operator key")
        }
        return (signedIn, form)
    }

    func signInPage(_ request: Request, error: ConsolePages.ErrorView?, status: HTTPResponse.Status = .ok) -> Response {
        let token = ConsoleSessions.randomToken()
        var response = ConsolePages.render("sign-in", SignInPage(title: "Sign in", csrfToken: token, error: error), status: status)
        response.headers[.setCookie] = cookie(Self.signInCookie, value: token, path: "/console/sign-in", maxAge: 600)
        return response
    }

    struct SignInPage {
        let title: String
        let csrfToken: String
        let error: ConsolePages.ErrorView?
    }

    func signIn(_ request: Request, source: String) async throws -> Response {
        // Before anything is read: an address past its failed sign-ins waits, whatever it presents.
        if let seconds = failures?.signInRetryAfter(source: source) {
            let message = "too many failed sign-ins from this address: try again in \(seconds) s"
            var response = signInPage(request, error: .init(code: "too_many_attempts", message: message), status: .tooManyRequests)
            response.headers[.retryAfter] = "\(seconds)"
            return response
        }
        let form = try await ConsoleForm.read(request, limit: Self.maximumFormBytes)
        guard let expected = Self.cookie(Self.signInCookie, of: request), let presented = form["csrf_token"],
            ConsoleSessions.tokensEqual(expected, presented)
        else {
            throw APIError(
                status: .forbidden,
                code: "csrf_token_invalid",
                message: "the sign-in form's token is missing or stale: load the page again"
            )
        }
        let key = (form["key"] ?? "").trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty, let found = keyring.principalAndFingerprint(forKey: key) else {
            failures?.record(.consoleSignIn, source: source)
            return signInPage(request, error: .init(code: "unauthenticated", message: "the API key is not valid"), status: .unauthorized)
        }
        let (token, _) = sessions.open(principal: found.principal, keyFingerprint: found.fingerprint)
        var headers = HTTPFields()
        headers.append(
            HTTPField(name: .setCookie, value: cookie(Self.sessionCookie, value: token, path: "/console", maxAge: Int(ConsoleSessions.lifetime)))
        )
        headers.append(HTTPField(name: .setCookie, value: expiredCookie(Self.signInCookie, path: "/console/sign-in")))
        return ConsolePages.seeOther("/console/today", headers: headers)
    }

    func cookie(_ name: String, value: String, path: String, maxAge: Int) -> String {
        "\(name)=\(value); Path=\(path); Max-Age=\(maxAge); HttpOnly; SameSite=Strict\(secureCookies ? "; Secure" : "")"
    }

    func expiredCookie(_ name: String, path: String = "/console") -> String { cookie(name, value: "", path: path, maxAge: 0) }

    /// The value of the cookie `name` (the first, when a browser sends two).
    static func cookie(_ name: String, of request: Request) -> String? {
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name else { continue }
                let value = parts[1].trimmingCharacters(in: .whitespaces)
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }

    static func asset(_ text: String, type: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    // MARK: Orders

    struct StatusOption {
        let name: String
        let selected: Bool
    }

    struct OrderRow {
        let id: String
        let path: String
        let openedAt: String
        let status: String
        let total: String
        let currency: String
    }

    struct FindPage {
        let title = "Orders"
        let session: ConsolePages.SessionView
        var query = ""
        var error: ConsolePages.ErrorView?
        /// Whether the search offers the e-mail address (an operator's session).
        var emailSearch = false
        /// The list's heading: the search's matches, or the list by status and day.
        var listHeading = "Orders by status and date"
        var statuses: [StatusOption] = []
        var from = ""
        var to = ""
        var statusError: ConsolePages.ErrorView?
        var fromError: ConsolePages.ErrorView?
        var toError: ConsolePages.ErrorView?
        let pageSize = ConsoleRoutes.ordersPageSize
        var rows: [OrderRow] = []
        var next: String?
        /// The list's filters as a CSV download (nil for a search's results).
        var exportPath: String?
    }

    /// Orders on a page of the list.
    static let ordersPageSize = 50

    /// The most orders a search by reference or e-mail lists.
    static let searchLimit = 50

    /// With `q` (or `id`): an order id (which is also its merchant reference, the acquirer's idempotency key), the
    /// acquirer's PSP reference of its payment, or — an operator's search only, auditors see no personal data — the
    /// shopper's e-mail address. One order found: to its page; several: listed; none: the error next to the field.
    /// Without it: the orders by status and opening day (`GET /orders`'s reader: oldest first, cursor-paged), each
    /// filter's error next to it.
    func findOrder(_ request: Request, _ signedIn: SignedIn) async throws -> Response {
        let parameters = request.uri.queryParameters
        var page = FindPage(session: signedIn.view)
        page.emailSearch = signedIn.isOperator
        page.statuses = OrderStatus.allCases.map { StatusOption(name: $0.rawValue, selected: false) }
        let searched = (parameters["q"] ?? parameters["id"]).map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
        if !searched.isEmpty {
            page.query = searched
            let found: [String]
            if Self.holdsNUL(searched) {
                found = []
            } else if try await orders.orderJSON(id: searched) != nil {
                found = [searched]
            } else if searched.contains("@") {
                guard signedIn.isOperator else {
                    page.error = .init(code: "forbidden", message: "a search by e-mail needs an operator key: auditors see no personal data")
                    return ConsolePages.render("orders", page, status: .forbidden)
                }
                found = try await privacy.orderIDs(withEmail: searched, limit: Self.searchLimit)
            } else {
                found = try await orders.orderIDs(pspReference: searched, limit: Self.searchLimit)
            }
            if found.count == 1 { return ConsolePages.seeOther(Self.path("orders", found[0])) }
            guard !found.isEmpty else {
                let what = signedIn.isOperator ? "id, merchant reference, PSP reference or e-mail" : "id, merchant reference or PSP reference"
                page.error = .init(code: "not_found", message: "no order with the \(what) \(searched)")
                return ConsolePages.render("orders", page, status: .notFound)
            }
            for id in found { if let json = try await orders.orderJSON(id: id), let row = Self.orderRow(json) { page.rows.append(row) } }
            page.listHeading = "Orders matching \(searched)"
            return ConsolePages.render("orders", page)
        }
        let status = parameters["status"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
        page.statuses = OrderStatus.allCases.map { StatusOption(name: $0.rawValue, selected: $0.rawValue == status) }
        page.from = parameters["from"].map(String.init) ?? ""
        page.to = parameters["to"].map(String.init) ?? ""
        var query = OrderQuery(status: nil, from: nil, to: nil, limit: Self.ordersPageSize, cursor: 0)
        if let status {
            if OrderStatus(rawValue: status) != nil {
                query.status = status
            } else {
                let names = OrderStatus.allCases.map(\.rawValue).sorted().joined(separator: ", ")
                page.statusError = .init(code: "invalid_parameter", message: "status must be one of \(names)")
            }
        }
        if !page.from.isEmpty {
            if let day = Self.utcDay(page.from) { query.from = day } else { page.fromError = Self.dayError("from") }
        }
        if !page.to.isEmpty {
            // Through that day: before the next midnight.
            if let day = Self.utcDay(page.to) { query.to = day.addingTimeInterval(24 * 3600) } else { page.toError = Self.dayError("to") }
        }
        do {
            query.cursor = try AuditRoutes.integer(parameters["cursor"].map(String.init), name: "cursor", default: 0, range: 0...Int64.max)
        } catch let error as APIError {
            page.error = .init(code: error.code, message: error.message)
        }
        guard page.statusError == nil, page.fromError == nil, page.toError == nil, page.error == nil else {
            return ConsolePages.render("orders", page, status: .badRequest)
        }
        let found = try await orders.orders(query)
        page.rows = found.ordersJSON.compactMap(Self.orderRow)
        var filters = URLComponents()
        filters.path = "/console/orders.csv"
        filters.queryItems = [("status", query.status ?? ""), ("from", page.from), ("to", page.to)].filter { !$0.1.isEmpty }.map {
            URLQueryItem(name: $0.0, value: $0.1)
        }
        if filters.queryItems?.isEmpty == true { filters.queryItems = nil }
        page.exportPath = filters.string
        page.next = found.nextCursor.map { cursor in
            var items = [URLQueryItem(name: "cursor", value: String(cursor))]
            if let status = query.status { items.append(URLQueryItem(name: "status", value: status)) }
            if !page.from.isEmpty { items.append(URLQueryItem(name: "from", value: page.from)) }
            if !page.to.isEmpty { items.append(URLQueryItem(name: "to", value: page.to)) }
            var components = URLComponents()
            components.path = "/console/orders"
            components.queryItems = items
            return components.string ?? "/console/orders"
        }
        return ConsolePages.render("orders", page)
    }

    /// A list's row from an order's read-model row (`GET /orders/{id}`'s `order`).
    static func orderRow(_ json: String) -> OrderRow? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else { return nil }
        let id = object["id"] as? String ?? ""
        return OrderRow(
            id: id,
            path: Self.path("orders", id),
            openedAt: object["opened_at"] as? String ?? "",
            status: object["status"] as? String ?? "",
            total: object["total"] as? String ?? "",
            currency: object["currency"] as? String ?? ""
        )
    }

    /// Midnight UTC of `YYYY-MM-DD` (what a date input sends), or nil.
    static func utcDay(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)),
            calendar.component(.day, from: date) == day
        else { return nil }
        return date
    }

    static func dayError(_ field: String) -> ConsolePages.ErrorView {
        .init(code: "invalid_parameter", message: "\(field) must be a day, e.g. 2026-11-21")
    }

    /// `text` as one path segment (an order id with a slash or a space still names one order): percent-encoded, so
    /// that a `/`, `?`, `#`, `\` or `%` in an id (a break's carries a report's reference) cannot re-aim a link or a
    /// form at another route (security review 4, M3). The console's routes decode it again (``id(_:)``).
    static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? text
    }

    /// The console URL `/console/<segment>/<segment>…`, each segment percent-encoded as one (``pathSegment(_:)``): the
    /// one way a page's link or form names an id — the templates never splice an id into a path.
    static func path(_ segments: String...) -> String {
        "/console/" + segments.map(pathSegment).joined(separator: "/")
    }

    /// The route's `id`, percent-decoded (Hummingbird hands path parameters over as written): what ``path(_:)`` encoded.
    /// A NUL (`%00` decoded) is refused as not found: no id holds one, and PostgreSQL refuses it in a text parameter
    /// (a 500 before this check).
    static func id(_ context: LedgerRequestContext) throws -> String {
        let raw = try context.parameters.require("id")
        let id = raw.removingPercentEncoding ?? raw
        guard !holdsNUL(id) else { throw APIError.notFound("no such id: it holds U+0000") }
        return id
    }

    /// Whether `text` holds U+0000, which no id, reference or e-mail address holds and PostgreSQL refuses in text.
    static func holdsNUL(_ text: String) -> Bool { text.utf8.contains(0) }

    func orderPage(
        id: String,
        _ signedIn: SignedIn,
        actions: ConsolePages.Actions? = nil,
        notice: String? = nil,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        guard let row = try await orders.orderJSON(id: id) else { throw APIError.notFound("no order \(id)") }
        let history = try await ledger.orderHistory(id)
        var shown: ConsolePages.Actions?
        if signedIn.isOperator {
            var offered = ConsolePages.Actions(offered: Self.offered(id: id, history: history, now: clock()))
            // A refused form stays on the page with its error, whatever the state now allows.
            for kind in Self.actionKinds { if let form = actions?[kind] { offered[kind] = form } }
            shown = offered
        }
        let page = ConsolePages.orderPage(
            id: id,
            rowJSON: row,
            history: history,
            session: signedIn.view,
            actions: shown,
            notice: notice
        )
        return ConsolePages.render("order", page, status: status)
    }

    /// An operator's action from its form: the API's operation with the form's idempotency key (one per rendered form,
    /// so a double submit is one operation). Done: back to the order (303). Refused: the page again with the API's code
    /// and message next to the field, what was typed kept, a fresh key (nothing was recorded under the old one).
    func perform(_ kind: HoldOperationRequest.Kind, id: String, form: ConsoleForm, _ signedIn: SignedIn) async throws -> Response {
        let key = form["idempotency_key"] ?? ""
        var typed = ConsolePages.ActionForm()
        typed.amount = form["amount"] ?? ""
        typed.reason = form["reason"] ?? ""
        typed.carrier = form["carrier"] ?? ""
        typed.tracking = form["tracking"] ?? ""
        do {
            guard (1...200).contains(key.utf8.count) else {
                throw APIError.badRequest("invalid_idempotency_key", "Idempotency-Key must be 1…200 bytes", field: "Idempotency-Key")
            }
            let request = try HoldOperationRequest.parse(kind: kind, body: ByteBuffer(bytes: try Self.jsonBody(kind, form)))
            // A refund cannot be taken back: checked, then confirmed on a page of its own with its amounts (issue 55).
            if kind == .refund && !Self.isConfirmed(form) {
                return try await refundConfirmation(id: id, request: request, form: form, signedIn)
            }
            _ = try await holdOperator.perform(orderID: id, request, idempotencyKey: key, actor: signedIn.principal.actor)
        } catch let error as ServiceError {
            return try await refused(kind, id: id, APIError(error), typed: typed, signedIn)
        } catch let error as APIError where error.status.code < 500 && error.status != .notFound {
            return try await refused(kind, id: id, error, typed: typed, signedIn)
        }
        return ConsolePages.seeOther(Self.path("orders", id) + "?done=\(kind.rawValue)")
    }

    func refused(
        _ kind: HoldOperationRequest.Kind,
        id: String,
        _ error: APIError,
        typed: ConsolePages.ActionForm,
        _ signedIn: SignedIn
    ) async throws -> Response {
        if error.status == .notFound || error.status.code >= 500 { throw error }
        var form = typed
        let shown = ConsolePages.ErrorView(code: error.code, message: error.message)
        switch error.field {
        case "amount": form.amountError = shown
        case "reason": form.reasonError = shown
        case "carrier": form.carrierError = shown
        case "tracking": form.trackingError = shown
        default: form.formError = shown
        }
        var actions = ConsolePages.Actions(offered: [])
        actions[kind] = form
        return try await orderPage(id: id, signedIn, actions: actions, status: error.status)
    }

    /// What the order's state allows now, folded from its history (its order and hold streams' events) and asked of
    /// the lifecycle's own rule.
    static func offered(id: String, history: [RecordedEvent], now: Date) -> [HoldOperation] {
        guard let orderID = OrderID(id) else { return [] }
        var states = AggregateStates()
        for event in history where event.streamID == orderID.streamID || event.streamID == orderID.holdStreamID {
            guard let domain = try? DomainEvent.decode(event) else { continue }
            states.apply(domain)
        }
        return HoldLifecycle.offered(order: states.orders[orderID], hold: states.holds[orderID], now: now)
    }

    /// The form's fields as the API's JSON body of `kind`: text fields left empty are absent (the API's default), the
    /// capture's `final` box is `true` when ticked.
    static func jsonBody(_ kind: HoldOperationRequest.Kind, _ form: ConsoleForm) throws -> [UInt8] {
        let fields: [String] =
            switch kind {
            case .capture, .void, .increment: ["amount"]
            case .refund: ["amount", "reason"]
            case .ship: ["carrier", "tracking"]
            }
        var body: [String: Any] = [:]
        for field in fields { if let value = form[field], !value.isEmpty { body[field] = value } }
        if kind == .capture, form["final"] == "true" { body["final"] = true }
        return Array(try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys]))
    }
}
