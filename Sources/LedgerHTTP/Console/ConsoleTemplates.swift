import Mustache

/// The console's pages as Mustache templates (swift-mustache), compiled into the binary: the daemon serves them with
/// no files beside it and no build step. `{{name}}` escapes HTML per byte (``ConsoleHTML``, quotes included, so values
/// are safe in attributes); no template uses the unescaped forms. An id in a URL is never spliced into a path here:
/// the view carries the whole URL, its ids percent-encoded as one path segment (``ConsoleRoutes/path(_:)``). No page
/// has a script or an inline style (the Content-Security-Policy forbids both): styles live in ``stylesheet``, served
/// from `/console/console.css`.
enum ConsoleTemplates {
    /// The library of every page, parsed once. Each template starts with the ``ConsoleHTML`` content type (a partial
    /// starts again with swift-mustache's own, so every template, the partials too, declares it).
    static let library: MustacheLibrary = {
        MustacheContentTypes.register(ConsoleHTML(), named: ConsoleHTML.name)
        var library = MustacheLibrary()
        for (name, text) in templates {
            do {
                try library.register(contentType + text, named: name)
            } catch {
                preconditionFailure("console template \(name) does not parse: \(error)")
            }
        }
        return library
    }()

    /// The first line of every template (a standalone tag: it writes nothing, not even its line end).
    static let contentType = "{{% CONTENT_TYPE: \(ConsoleHTML.name)}}\n"

    static let templates: [(String, String)] = [
        ("head", head), ("foot", foot), ("sign-in", signIn), ("error", error), ("orders", orders), ("order", order),
        ("today", today), ("audit", audit), ("disputes", disputes), ("dispute", dispute),
        ("settlements", settlements), ("settlement", settlement), ("run-start", runStart), ("run-step", runStep), ("run-end", runEnd),
        ("as-of", asOf), ("journal", journal), ("verify-start", verifyStart), ("verify-step", verifyStep), ("verify-end", verifyEnd),
        ("confirm", confirm), ("bank-break-rows", bankBreakRows),
    ]

    static let head = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · ledgerd console</title>
        <link rel="stylesheet" href="/console/console.css">
        <link rel="icon" href="/console/favicon.svg" type="image/svg+xml">
        </head>
        <body>
        <header class="bar">
        <a class="brand" href="/console/today">ledgerd console</a>
        {{#session}}
        <nav aria-label="Console">
        <ul>
        <li><a href="/console/today">Today</a></li>
        <li><a href="/console/orders">Orders</a></li>
        <li><a href="/console/disputes">Disputes</a></li>
        <li><a href="/console/settlements">Settlement</a></li>
        <li><a href="/console/audit">Audit</a></li>
        </ul>
        </nav>
        <form class="sign-out" method="post" action="/console/sign-out">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <span class="who">{{actor}}</span>
        <button type="submit">Sign out</button>
        </form>
        {{/session}}
        </header>
        <main>

        """

    /// A table's rows of bank breaks (issue 53), each with an operator's resolve form while it is open (the batch's
    /// page and Today share it; the form returns to the page it was on).
    static let bankBreakRows = """
        <thead><tr><th scope="col">Break</th><th scope="col">Class</th><th scope="col">Expected</th><th scope="col">Actual</th><th scope="col">Difference</th><th scope="col">Detail</th><th scope="col">Resolution</th></tr></thead>
        <tbody>
        {{#bankBreaks}}<tr><td><code>{{id}}</code></td><td class="break-class">{{breakClass}}</td><td class="num">{{expected}}</td><td class="num">{{actual}}</td><td class="num">{{difference}}</td><td>{{detail}}</td><td>
        {{#resolved}}{{resolution}}{{/resolved}}
        {{#form}}<form method="post" action="{{path}}/resolve" class="stack resolve">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="batch_id" value="{{batchID}}">
        <label for="bank-reason-{{id}}">Resolve with a note</label>
        <input id="bank-reason-{{id}}" name="reason" maxlength="500" value="{{reason}}"{{#error}} aria-invalid="true" aria-describedby="bank-reason-{{id}}-error"{{/error}}>
        {{#error}}<p class="error" id="bank-reason-{{id}}-error"><code>{{code}}</code> {{message}}</p>{{/error}}
        <button type="submit">Resolve</button>
        </form>{{/form}}
        {{^resolved}}{{^form}}open{{/form}}{{/resolved}}
        </td></tr>
        {{/bankBreaks}}
        {{^bankBreaks}}<tr><td colspan="7">No bank break.</td></tr>{{/bankBreaks}}
        </tbody>

        """

    static let foot = """
        </main>
        </body>
        </html>

        """

    static let signIn = """
        {{> head}}
        <h1>Sign in</h1>
        <p>Sign in with an operator or auditor API key (the daemon's <code>api-keys.json</code>, or one from
        <code>ledgerd keys add</code>). The key is checked on every request: revoking it signs its sessions out.</p>
        <form method="post" action="/console/sign-in" class="stack">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label for="key">API key</label>
        <input id="key" name="key" type="password" autocomplete="off" required{{#error}} aria-invalid="true" aria-describedby="key-error"{{/error}}>
        {{#error}}<p class="error" id="key-error"><code>{{code}}</code> {{message}}</p>{{/error}}
        <button type="submit">Sign in</button>
        </form>
        {{> foot}}
        """

    static let error = """
        {{> head}}
        <h1>{{heading}}</h1>
        <p class="error"><code>{{code}}</code> {{message}}</p>
        <p><a href="{{back}}">{{backLabel}}</a></p>
        {{> foot}}
        """

    static let orders = """
        {{> head}}
        <h1>Orders</h1>
        <form method="get" action="/console/orders" class="stack" role="search">
        <label for="order-id">Order id, merchant reference or PSP reference{{#emailSearch}}, or the shopper's e-mail{{/emailSearch}}</label>
        <input id="order-id" name="q" value="{{query}}" required{{#error}} aria-invalid="true" aria-describedby="id-error"{{/error}}>
        {{#error}}<p class="error" id="id-error"><code>{{code}}</code> {{message}}</p>{{/error}}
        <button type="submit">Find</button>
        </form>
        <section aria-labelledby="list">
        <h2 id="list">{{listHeading}}</h2>
        <form method="get" action="/console/orders" class="filters">
        <div class="stack">
        <label for="status">Status</label>
        <select id="status" name="status"{{#statusError}} aria-invalid="true" aria-describedby="status-error"{{/statusError}}>
        <option value="">any</option>
        {{#statuses}}<option value="{{name}}"{{#selected}} selected{{/selected}}>{{name}}</option>
        {{/statuses}}
        </select>
        {{#statusError}}<p class="error" id="status-error"><code>{{code}}</code> {{message}}</p>{{/statusError}}
        </div>
        <div class="stack">
        <label for="from">Opened from (UTC day)</label>
        <input id="from" name="from" type="date" value="{{from}}"{{#fromError}} aria-invalid="true" aria-describedby="from-error"{{/fromError}}>
        {{#fromError}}<p class="error" id="from-error"><code>{{code}}</code> {{message}}</p>{{/fromError}}
        </div>
        <div class="stack">
        <label for="to">Opened through (UTC day)</label>
        <input id="to" name="to" type="date" value="{{to}}"{{#toError}} aria-invalid="true" aria-describedby="to-error"{{/toError}}>
        {{#toError}}<p class="error" id="to-error"><code>{{code}}</code> {{message}}</p>{{/toError}}
        </div>
        <button type="submit">List</button>
        </form>
        <table>
        <caption>Oldest first, {{pageSize}} a page</caption>
        <thead><tr><th scope="col">Order</th><th scope="col">Opened</th><th scope="col">Status</th><th scope="col">Total</th></tr></thead>
        <tbody>
        {{#rows}}<tr><td><a href="{{path}}">{{id}}</a></td><td>{{openedAt}}</td><td>{{status}}</td><td class="num">{{total}} {{currency}}</td></tr>
        {{/rows}}
        {{^rows}}<tr><td colspan="4">No order.</td></tr>{{/rows}}
        </tbody>
        </table>
        {{#next}}<p><a id="next-page" href="{{.}}">Next page</a></p>{{/next}}
        {{#exportPath}}<p><a id="export-csv" href="{{.}}">Download every order of this list (CSV)</a></p>{{/exportPath}}
        </section>
        {{> foot}}
        """

    /// An order: its figures, the hold, the operator's actions (each form with its own idempotency key), the timeline.
    static let order = """
        {{> head}}
        <h1>Order <code>{{id}}</code></h1>
        {{#notice}}<p class="notice" role="status">{{.}}</p>{{/notice}}
        <section aria-labelledby="summary">
        <h2 id="summary">Summary</h2>
        <dl class="figures">
        <dt>Status</dt><dd class="status" id="order-status">{{status}}</dd>
        <dt>Opened</dt><dd>{{openedAt}}</dd>
        <dt>Total</dt><dd>{{total}} {{currency}}</dd>
        <dt>Goods</dt><dd>{{subtotal}}</dd>
        <dt>Tax</dt><dd>{{tax}}</dd>
        <dt>Shipping</dt><dd>{{shipping}} {{shippingMethod}}</dd>
        {{#references}}<dt>{{label}}</dt><dd id="ref-{{id}}"><code>{{value}}</code></dd>
        {{/references}}
        </dl>
        <table>
        <caption>Lines</caption>
        <thead><tr><th scope="col">Product</th><th scope="col">Quantity</th><th scope="col">Unit price</th><th scope="col">Line total</th></tr></thead>
        <tbody>
        {{#lines}}<tr><td>{{name}}</td><td class="num">{{quantity}}</td><td class="num">{{unitPrice}}</td><td class="num">{{lineTotal}}</td></tr>
        {{/lines}}
        </tbody>
        </table>
        </section>
        <section aria-labelledby="hold">
        <h2 id="hold">Hold</h2>
        {{#hold}}<p>Hold <strong>{{state}}</strong>, {{network}} …{{lastFour}}, expires {{expiresAt}}.</p>{{/hold}}
        <table class="hold-figures">
        <caption>The hold's figures ({{currency}})</caption>
        <tbody>
        {{#figures}}<tr><th scope="row">{{label}}</th><td class="num" id="figure-{{label}}">{{value}}</td></tr>
        {{/figures}}
        </tbody>
        </table>
        </section>
        {{#actions}}
        <section aria-labelledby="actions">
        <h2 id="actions">Actions</h2>
        {{#noAction}}<p id="no-action">No action is open for an order that is {{status}}.</p>{{/noAction}}
        <div class="actions">
        {{#capture}}
        <form method="post" action="{{path}}/capture" class="stack" id="capture-form">
        <h3>Capture</h3>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="idempotency_key" value="{{idempotencyKey}}">
        {{#formError}}<p class="error"><code>{{code}}</code> {{message}}</p>{{/formError}}
        <label for="capture-amount">Amount (empty: all that is open)</label>
        <input id="capture-amount" name="amount" inputmode="decimal" value="{{amount}}"{{#amountError}} aria-invalid="true" aria-describedby="capture-amount-error"{{/amountError}}>
        {{#amountError}}<p class="error" id="capture-amount-error"><code>{{code}}</code> {{message}}</p>{{/amountError}}
        <label class="check"><input type="checkbox" name="final" value="true"> Final capture (release the rest)</label>
        <button type="submit">Capture</button>
        </form>
        {{/capture}}
        {{#void}}
        <form method="post" action="{{path}}/void" class="stack" id="void-form">
        <h3>Void</h3>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="idempotency_key" value="{{idempotencyKey}}">
        {{#formError}}<p class="error"><code>{{code}}</code> {{message}}</p>{{/formError}}
        <label for="void-amount">Amount (empty: all that is open)</label>
        <input id="void-amount" name="amount" inputmode="decimal" value="{{amount}}"{{#amountError}} aria-invalid="true" aria-describedby="void-amount-error"{{/amountError}}>
        {{#amountError}}<p class="error" id="void-amount-error"><code>{{code}}</code> {{message}}</p>{{/amountError}}
        <button type="submit">Void</button>
        </form>
        {{/void}}
        {{#refund}}
        <form method="post" action="{{path}}/refund" class="stack" id="refund-form">
        <h3>Refund</h3>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="idempotency_key" value="{{idempotencyKey}}">
        {{#formError}}<p class="error"><code>{{code}}</code> {{message}}</p>{{/formError}}
        <label for="refund-amount">Amount</label>
        <input id="refund-amount" name="amount" inputmode="decimal" value="{{amount}}"{{#amountError}} aria-invalid="true" aria-describedby="refund-amount-error"{{/amountError}}>
        {{#amountError}}<p class="error" id="refund-amount-error"><code>{{code}}</code> {{message}}</p>{{/amountError}}
        <label for="refund-reason">Reason</label>
        <input id="refund-reason" name="reason" maxlength="200" value="{{reason}}"{{#reasonError}} aria-invalid="true" aria-describedby="refund-reason-error"{{/reasonError}}>
        {{#reasonError}}<p class="error" id="refund-reason-error"><code>{{code}}</code> {{message}}</p>{{/reasonError}}
        <button type="submit">Refund</button>
        </form>
        {{/refund}}
        {{#ship}}
        <form method="post" action="{{path}}/ship" class="stack" id="ship-form">
        <h3>Ship</h3>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="idempotency_key" value="{{idempotencyKey}}">
        {{#formError}}<p class="error"><code>{{code}}</code> {{message}}</p>{{/formError}}
        <label for="ship-carrier">Carrier</label>
        <input id="ship-carrier" name="carrier" maxlength="200" value="{{carrier}}"{{#carrierError}} aria-invalid="true" aria-describedby="ship-carrier-error"{{/carrierError}}>
        {{#carrierError}}<p class="error" id="ship-carrier-error"><code>{{code}}</code> {{message}}</p>{{/carrierError}}
        <label for="ship-tracking">Tracking</label>
        <input id="ship-tracking" name="tracking" maxlength="200" value="{{tracking}}"{{#trackingError}} aria-invalid="true" aria-describedby="ship-tracking-error"{{/trackingError}}>
        {{#trackingError}}<p class="error" id="ship-tracking-error"><code>{{code}}</code> {{message}}</p>{{/trackingError}}
        <button type="submit">Ship</button>
        </form>
        {{/ship}}
        </div>
        </section>
        {{/actions}}
        <section aria-labelledby="timeline">
        <h2 id="timeline">Timeline</h2>
        <table class="timeline">
        <caption>Every event of the order's history, in position order</caption>
        <thead><tr><th scope="col">Position</th><th scope="col">Recorded</th><th scope="col">What happened</th><th scope="col">Event</th><th scope="col">Stream</th><th scope="col">By</th></tr></thead>
        <tbody>
        {{#events}}<tr><td class="num">{{position}}</td><td>{{recordedAt}}</td><td class="sentence">{{sentence}}<details class="raw"><summary>raw</summary><code class="data">{{data}}</code></details></td><td class="event-type">{{type}}</td><td><code>{{stream}}</code></td><td>{{actor}}</td></tr>
        {{/events}}
        </tbody>
        </table>
        </section>
        {{> foot}}
        """

    static let today = """
        {{> head}}
        <h1>Today <small>{{date}} (UTC)</small></h1>
        {{#notice}}<p class="notice" role="status">{{.}}</p>{{/notice}}
        <section aria-labelledby="orders-today">
        <h2 id="orders-today">Payments today</h2>
        <p><strong id="orders-count">{{ordersCount}}</strong> payments answered by the issuer{{#moreOrders}} (the first 1,000 of the day: a busier day's whole count is in the <a href="/console/audit">journal</a> and the <a href="/console/orders">order list</a>){{/moreOrders}}.</p>
        <table>
        <caption>Authorized (with their total by currency) and declined</caption>
        <thead><tr><th scope="col">Currency</th><th scope="col">Outcome</th><th scope="col">Payments</th><th scope="col">Total</th></tr></thead>
        <tbody>
        {{#totals}}<tr><td>{{currency}}</td><td>{{status}}</td><td class="num">{{count}}</td><td class="num">{{total}}</td></tr>
        {{/totals}}
        {{^totals}}<tr><td colspan="4">No payment yet today.</td></tr>{{/totals}}
        </tbody>
        </table>
        </section>
        <section aria-labelledby="movements">
        <h2 id="movements">Money moved today</h2>
        <table id="movements-table">
        <caption>The accounting journal's entries of the day, by kind and currency{{#moreMovements}} (its first 1,000 events: the whole day is under <a href="/console/audit">Audit</a>, its journal and export){{/moreMovements}}</caption>
        <thead><tr><th scope="col">Kind</th><th scope="col">Currency</th><th scope="col">Entries</th><th scope="col">Amount</th></tr></thead>
        <tbody>
        {{#movements}}<tr><td>{{kind}}</td><td>{{currency}}</td><td class="num">{{count}}</td><td class="num">{{amount}}</td></tr>
        {{/movements}}
        {{^movements}}<tr><td colspan="4">No money moved yet today.</td></tr>{{/movements}}
        </tbody>
        </table>
        </section>
        <section aria-labelledby="expiring">
        <h2 id="expiring">Holds expiring in the next 24 hours</h2>
        <table>
        <thead><tr><th scope="col">Order</th><th scope="col">Expires</th><th scope="col">Open</th></tr></thead>
        <tbody>
        {{#expiring}}<tr><td><a href="{{path}}">{{id}}</a></td><td>{{expiresAt}}</td><td class="num">{{open}} {{currency}}</td></tr>
        {{/expiring}}
        {{^expiring}}<tr><td colspan="3">None.</td></tr>{{/expiring}}
        </tbody>
        </table>
        </section>
        <section aria-labelledby="disputes">
        <h2 id="disputes">Disputes due soonest</h2>
        <table>
        <thead><tr><th scope="col">Dispute</th><th scope="col">Order</th><th scope="col">Status</th><th scope="col">Due</th><th scope="col">Amount</th></tr></thead>
        <tbody>
        {{#disputes}}<tr{{#overdue}} class="overdue"{{/overdue}}><td><a href="{{path}}">{{id}}</a></td><td><a href="{{orderPath}}">{{orderID}}</a></td><td>{{status}}{{#overdue}} (overdue){{/overdue}}</td><td>{{dueAt}}</td><td class="num">{{amount}}</td></tr>
        {{/disputes}}
        {{^disputes}}<tr><td colspan="5">No open dispute.</td></tr>{{/disputes}}
        </tbody>
        </table>
        </section>
        <section aria-labelledby="settlement">
        <h2 id="settlement">Settlement</h2>
        {{#cutOff}}<p id="next-cut-off">The open business day <strong>{{businessDate}}</strong> closes at its cut-off {{at}} (in {{inText}}).</p>{{/cutOff}}
        {{#lastBatch}}<p>Last batch <a href="{{path}}"><code>{{id}}</code></a> for {{businessDate}} ({{currency}}, merchant account <code>{{merchantAccount}}</code>): <strong>{{stage}}</strong>, gross {{gross}}{{#net}}, net {{.}}{{/net}}.</p>{{/lastBatch}}
        {{^lastBatch}}<p>No settlement batch in the last 30 days.</p>{{/lastBatch}}
        {{#chart}}
        <figure>
        <svg class="chart" role="img" aria-labelledby="chart-title" viewBox="0 0 {{width}} {{height}}" width="{{width}}" height="{{height}}" xmlns="http://www.w3.org/2000/svg">
        <title id="chart-title">{{title}}</title>
        <line class="axis" x1="{{left}}" y1="{{baseline}}" x2="{{right}}" y2="{{baseline}}"/>
        {{#bars}}<rect class="bar {{cssClass}}" x="{{x}}" y="{{y}}" width="{{width}}" height="{{height}}"><title>{{label}}</title></rect>
        {{/bars}}
        {{#ticks}}<text class="tick" x="{{x}}" y="{{y}}" text-anchor="{{anchor}}">{{label}}</text>
        {{/ticks}}
        </svg>
        <figcaption>{{title}}: {{#legend}}<span class="key {{cssClass}}">{{name}}</span> {{/legend}}</figcaption>
        </figure>
        {{/chart}}
        </section>
        <section aria-labelledby="feeds">
        <h2 id="feeds">Feeds and webhooks</h2>
        <table id="feeds-table">
        <caption>Each consumer's position and how far it is behind the head</caption>
        <thead><tr><th scope="col">Kind</th><th scope="col">Name</th><th scope="col">State</th><th scope="col">Position</th><th scope="col">Behind</th><th scope="col">Detail</th></tr></thead>
        <tbody>
        {{#feeds}}<tr{{#unhealthy}} class="unhealthy"{{/unhealthy}}><td>{{kind}}</td><td><code>{{name}}</code></td><td>{{state}}</td><td class="num">{{position}}</td><td class="num">{{lag}}</td><td>{{detail}}</td></tr>
        {{/feeds}}
        {{^feeds}}<tr><td colspan="6">No subscription or webhook endpoint.</td></tr>{{/feeds}}
        </tbody>
        </table>
        </section>
        {{#bank}}
        <section aria-labelledby="bank-payouts">
        <h2 id="bank-payouts">Payouts at the bank</h2>
        <p id="bank-payout-counts"><strong id="payouts-expected">{{expected}}</strong> expected, <strong id="payouts-arrived">{{arrived}}</strong> arrived, <strong id="payouts-late">{{late}}</strong> late, <strong id="payouts-differing">{{differs}}</strong> differing.</p>
        <table id="bank-payouts-table">
        <caption>Payouts late or differing, then those still expected</caption>
        <thead><tr><th scope="col">Batch</th><th scope="col">Payout reference</th><th scope="col">Amount</th><th scope="col">Received</th><th scope="col">Expected on</th><th scope="col">Window to</th><th scope="col">State</th></tr></thead>
        <tbody>
        {{#lines}}<tr class="payout-{{state}}"><td><a href="{{batchPath}}"><code>{{batchID}}</code></a></td><td><code>{{reference}}</code></td><td class="num">{{amount}}</td><td class="num">{{received}}</td><td>{{expectedDate}}</td><td>{{latest}}</td><td>{{state}}</td></tr>
        {{/lines}}
        {{^lines}}<tr><td colspan="7">None.</td></tr>{{/lines}}
        </tbody>
        </table>
        <table class="breaks" id="bank-breaks">
        <caption><span id="bank-open-breaks">{{openBreaks}}</span> open bank breaks</caption>
        {{> bank-break-rows}}
        </table>
        </section>
        {{/bank}}
        <section aria-labelledby="breaks">
        <h2 id="breaks">Open reconciliation breaks</h2>
        <p><strong id="open-breaks">{{openBreaks}}</strong> open in the last 30 days' batches{{#moreBreaks}} (the first {{shownBreaks}} below){{/moreBreaks}}.</p>
        <table>
        <thead><tr><th scope="col">Batch</th><th scope="col">Class</th><th scope="col">Reference</th><th scope="col">Expected</th><th scope="col">Actual</th><th scope="col">Detail</th></tr></thead>
        <tbody>
        {{#breaks}}<tr><td><a href="{{batchPath}}"><code>{{batchID}}</code></a></td><td class="break-class">{{breakClass}}</td><td><code>{{reference}}</code></td><td class="num">{{expected}}</td><td class="num">{{actual}}</td><td>{{detail}}</td></tr>
        {{/breaks}}
        {{^breaks}}<tr><td colspan="6">None.</td></tr>{{/breaks}}
        </tbody>
        </table>
        </section>
        {{> foot}}
        """

    static let disputes = """
        {{> head}}
        <h1>Disputes</h1>
        <form method="get" action="/console/disputes" class="filters">
        <div class="stack">
        <label for="status">Status</label>
        <select id="status" name="status"{{#statusError}} aria-invalid="true" aria-describedby="status-error"{{/statusError}}>
        <option value="">any</option>
        {{#statuses}}<option value="{{name}}"{{#selected}} selected{{/selected}}>{{name}}</option>
        {{/statuses}}
        </select>
        {{#statusError}}<p class="error" id="status-error"><code>{{code}}</code> {{message}}</p>{{/statusError}}
        </div>
        <button type="submit">List</button>
        </form>
        <table class="queue">
        <caption>The soonest deadline first; an open dispute past its deadline is marked overdue</caption>
        <thead><tr><th scope="col">Dispute</th><th scope="col">Order</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Due</th><th scope="col">Amount</th></tr></thead>
        <tbody>
        {{#rows}}<tr{{#overdue}} class="overdue"{{/overdue}}><td><a href="{{path}}">{{id}}</a></td><td><a href="{{orderPath}}">{{orderID}}</a></td><td>{{status}}{{#overdue}} <strong>(overdue)</strong>{{/overdue}}</td><td>{{reason}}</td><td>{{dueAt}}</td><td class="num">{{amount}}</td></tr>
        {{/rows}}
        {{^rows}}<tr><td colspan="6">No dispute.</td></tr>{{/rows}}
        </tbody>
        </table>
        {{#exportPath}}<p><a id="export-csv" href="{{.}}">Download every dispute of this list (CSV)</a></p>{{/exportPath}}
        {{#next}}<p><a id="next-page" href="{{.}}">Next page</a></p>{{/next}}
        {{> foot}}
        """

    static let dispute = """
        {{> head}}
        <h1>Dispute <code>{{id}}</code></h1>
        {{#notice}}<p class="notice" role="status">{{.}}</p>{{/notice}}
        <section aria-labelledby="summary">
        <h2 id="summary">Summary</h2>
        <dl class="figures">
        <dt>Status</dt><dd id="dispute-status">{{status}}{{#overdue}} <strong class="bad">(overdue)</strong>{{/overdue}}</dd>
        <dt>Order</dt><dd><a href="{{orderPath}}">{{orderID}}</a> ({{orderStatus}})</dd>
        <dt>Reason</dt><dd>{{reason}}</dd>
        <dt>Amount</dt><dd>{{amount}}</dd>
        <dt>Charged back</dt><dd>{{chargedBack}}</dd>
        <dt>Reversed</dt><dd>{{reversed}}</dd>
        <dt>Respond by</dt><dd>{{dueAt}}</dd>
        <dt>Evidence</dt><dd>{{#evidence}}<code>{{.}}</code> {{/evidence}}{{^evidence}}none sent{{/evidence}}</dd>
        </dl>
        </section>
        {{#forms}}
        <section aria-labelledby="answers">
        <h2 id="answers">Answers</h2>
        <div class="actions">
        <form method="post" action="{{path}}/defend" class="stack" id="defend-form">
        <h3>Defend</h3>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label for="evidence-refs">Evidence references, one per line</label>
        <textarea id="evidence-refs" name="evidence_refs" rows="4"{{#defendError}} aria-invalid="true" aria-describedby="defend-error"{{/defendError}}>{{evidence}}</textarea>
        {{#defendError}}<p class="error" id="defend-error"><code>{{code}}</code> {{message}}</p>{{/defendError}}
        <button type="submit">Defend</button>
        </form>
        <form method="post" action="{{path}}/accept" class="stack" id="accept-form">
        <h3>Accept</h3>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <p>Accept the chargeback: the money stays with the cardholder.</p>
        {{#acceptError}}<p class="error" id="accept-error"><code>{{code}}</code> {{message}}</p>{{/acceptError}}
        <button type="submit">Accept</button>
        </form>
        </div>
        </section>
        {{/forms}}
        <section aria-labelledby="stages">
        <h2 id="stages">Stages</h2>
        <table class="timeline">
        <caption>The dispute's events, in position order</caption>
        <thead><tr><th scope="col">Position</th><th scope="col">Recorded</th><th scope="col">Event</th><th scope="col">By</th><th scope="col">Data</th></tr></thead>
        <tbody>
        {{#stages}}<tr><td class="num">{{position}}</td><td>{{recordedAt}}</td><td class="event-type">{{type}}</td><td>{{actor}}</td><td><code class="data">{{data}}</code></td></tr>
        {{/stages}}
        </tbody>
        </table>
        </section>
        {{> foot}}
        """

    static let settlements = """
        {{> head}}
        <h1>Settlement</h1>
        <form method="get" action="/console/settlements" class="filters">
        <div class="stack">
        <label for="from">Business days from</label>
        <input id="from" name="from" type="date" value="{{from}}"{{#fromError}} aria-invalid="true" aria-describedby="from-error"{{/fromError}}>
        {{#fromError}}<p class="error" id="from-error"><code>{{code}}</code> {{message}}</p>{{/fromError}}
        </div>
        <div class="stack">
        <label for="to">through (empty: the latest)</label>
        <input id="to" name="to" type="date" value="{{to}}"{{#toError}} aria-invalid="true" aria-describedby="to-error"{{/toError}}>
        {{#toError}}<p class="error" id="to-error"><code>{{code}}</code> {{message}}</p>{{/toError}}
        </div>
        <button type="submit">List</button>
        </form>
        {{#run}}
        <div class="actions">
        <form method="post" action="/console/settlements/run" class="stack" id="run-form">
        <h2>Run settlement</h2>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label for="run-date">Business day (empty: {{lastClosed}}, the last whose cut-off has passed)</label>
        <input id="run-date" name="business_date" type="date" value="{{businessDate}}"{{#dateError}} aria-invalid="true" aria-describedby="run-date-error"{{/dateError}}>
        {{#dateError}}<p class="error" id="run-date-error"><code>{{code}}</code> {{message}}</p>{{/dateError}}
        <label class="check"><input type="checkbox" id="run-close-now" name="close_now" value="true"{{#closeNow}} checked{{/closeNow}}> Close the open day now, before its cut-off (recorded as your early close)</label>
        <button type="submit">Run settlement</button>
        </form>
        <form method="post" action="/console/reports" class="stack" id="upload-form" enctype="multipart/form-data">
        <h2>Reconcile an acquirer's report</h2>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label for="report-format">Format</label>
        <select id="report-format" name="format">
        <option value="">as its header says</option>
        {{#formats}}<option value="{{name}}"{{#selected}} selected{{/selected}}>{{name}}</option>
        {{/formats}}
        </select>
        <label for="report-batch">Batch (empty: the batch the report names)</label>
        <input id="report-batch" name="batch" maxlength="100" value="{{batch}}">
        <label for="report-file">Report file (CSV)</label>
        <input id="report-file" name="report" type="file" accept=".csv,text/csv" required{{#uploadError}} aria-invalid="true" aria-describedby="report-file-error"{{/uploadError}}>
        {{#uploadError}}<p class="error" id="report-file-error"><code>{{code}}</code> {{message}}</p>{{/uploadError}}
        <button type="submit">Upload and reconcile</button>
        </form>
        {{#bank}}
        <form method="post" action="/console/bank/statements" class="stack" id="statement-form" enctype="multipart/form-data">
        <h2>Import a bank statement</h2>
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <label for="statement-format">Format</label>
        <select id="statement-format" name="format">
        <option value="">as its content says</option>
        {{#formats}}<option value="{{name}}"{{#selected}} selected{{/selected}}>{{name}}</option>
        {{/formats}}
        </select>
        <label for="statement-file">Statement file (camt.053, camt.054, MT940, BAI2)</label>
        <input id="statement-file" name="statement" type="file" required{{#error}} aria-invalid="true" aria-describedby="statement-file-error"{{/error}}>
        {{#error}}<p class="error" id="statement-file-error"><code>{{code}}</code> {{message}}</p>{{/error}}
        <button type="submit">Upload and import</button>
        </form>
        {{/bank}}
        </div>
        {{/run}}
        {{#bankImport}}
        <table id="statement-import">
        <caption>Bank statement file imported ({{format}}, SHA-256 <code>{{fileSHA256}}</code>)</caption>
        <thead><tr><th scope="col">Statement</th><th scope="col">Sequence</th><th scope="col">Account</th><th scope="col">Status</th><th scope="col">Entries</th><th scope="col">Net</th><th scope="col">Events appended</th></tr></thead>
        <tbody>
        {{#rows}}<tr><td>{{statementID}}</td><td>{{sequence}}</td><td>{{account}}</td><td>{{status}}</td><td class="num">{{entries}}</td><td class="num">{{net}}</td><td class="num">{{appended}}</td></tr>
        {{/rows}}
        </tbody>
        </table>
        {{/bankImport}}
        <table>
        <caption>Batches by business day</caption>
        <thead><tr><th scope="col">Batch</th><th scope="col">Day</th><th scope="col">Currency</th><th scope="col">Stage</th><th scope="col">Captures / refunds</th><th scope="col">Gross</th><th scope="col">Net</th><th scope="col">Payout</th></tr></thead>
        <tbody>
        {{#rows}}<tr><td><a href="{{path}}">{{id}}</a></td><td>{{businessDate}}</td><td>{{currency}}</td><td>{{stage}}</td><td class="num">{{items}}</td><td class="num">{{gross}}</td><td class="num">{{net}}</td><td>{{payout}}</td></tr>
        {{/rows}}
        {{^rows}}<tr><td colspan="8">No batch.</td></tr>{{/rows}}
        </tbody>
        </table>
        {{> foot}}
        """

    static let settlement = """
        {{> head}}
        <h1>Batch <code>{{id}}</code></h1>
        {{#notice}}<p class="notice" role="status">{{.}}</p>{{/notice}}
        <section aria-labelledby="figures">
        <h2 id="figures">Figures</h2>
        <dl class="figures">
        {{#figures}}<dt>{{label}}</dt><dd>{{value}}</dd>
        {{/figures}}
        </dl>
        {{#closedEarly}}<p id="closed-early">The day was {{.}}.</p>{{/closedEarly}}
        <p id="downloads">Download: {{#reportCSV}}<a href="{{.}}">the acquirer's report (CSV)</a> · {{/reportCSV}}<a href="{{itemsCSV}}">the batch's items (CSV)</a> · <a href="{{breaksCSV}}">its breaks (CSV)</a></p>
        </section>
        {{#legs}}
        <section aria-labelledby="legs">
        <h2 id="legs">Ledger ↔ acquirer ↔ bank</h2>
        <dl class="figures" id="three-legs">
        {{#states}}<dt>{{label}}</dt><dd class="leg">{{value}}</dd>
        {{/states}}
        </dl>
        <table class="breaks" id="bank-breaks">
        <caption>Bank breaks naming this batch's payout</caption>
        {{> bank-break-rows}}
        </table>
        </section>
        {{/legs}}
        <section aria-labelledby="items">
        <h2 id="items">Items</h2>
        <table id="batch-items">
        <caption>The captures and refunds this batch settled, in ledger order</caption>
        <thead><tr><th scope="col">Position</th><th scope="col">Kind</th><th scope="col">Order</th><th scope="col">Our reference</th><th scope="col">Acquirer's reference</th><th scope="col">Amount</th><th scope="col">Recorded</th></tr></thead>
        <tbody>
        {{#items}}<tr><td class="num">{{position}}</td><td>{{kind}}</td><td><a href="{{orderPath}}">{{orderID}}</a></td><td><code>{{reference}}</code></td><td><code>{{pspReference}}</code></td><td class="num">{{amount}}</td><td>{{recordedAt}}</td></tr>
        {{/items}}
        {{^items}}<tr><td colspan="7">No item.</td></tr>{{/items}}
        </tbody>
        </table>
        {{#itemsNext}}<p><a href="{{.}}" id="items-next">next items</a></p>{{/itemsNext}}
        {{#itemsFirst}}<p><a href="{{.}}" id="items-first">first items</a></p>{{/itemsFirst}}
        </section>
        <section aria-labelledby="reconciliation">
        <h2 id="reconciliation">Reconciliation</h2>
        {{^reconciled}}<p>Not reconciled yet.</p>{{/reconciled}}
        {{#reports}}
        <h3>{{heading}} <small>reconciled {{recordedAt}}</small></h3>
        <dl class="figures">
        {{#counts}}<dt>{{label}}</dt><dd>{{value}}</dd>
        {{/counts}}
        </dl>
        <table class="breaks">
        <caption>Breaks: this report against the ledger</caption>
        <thead><tr><th scope="col">Break</th><th scope="col">Class</th><th scope="col">Reference</th><th scope="col">Expected (ledger)</th><th scope="col">Actual (report)</th><th scope="col">Detail</th><th scope="col">Resolution</th></tr></thead>
        <tbody>
        {{#breaks}}<tr><td><code>{{id}}</code></td><td class="break-class">{{breakClass}}</td><td><code>{{reference}}</code></td><td class="num">{{expected}}</td><td class="num">{{actual}}</td><td>{{detail}}</td><td>
        {{#resolved}}{{resolution}}{{/resolved}}
        {{#form}}<form method="post" action="{{path}}/resolve" class="stack resolve">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <input type="hidden" name="batch_id" value="{{batchID}}">
        <label for="reason-{{id}}">Resolve with a note</label>
        <input id="reason-{{id}}" name="reason" maxlength="500" value="{{reason}}"{{#error}} aria-invalid="true" aria-describedby="reason-{{id}}-error"{{/error}}>
        {{#error}}<p class="error" id="reason-{{id}}-error"><code>{{code}}</code> {{message}}</p>{{/error}}
        <button type="submit">Resolve</button>
        </form>{{/form}}
        {{^resolved}}{{^form}}open{{/form}}{{/resolved}}
        </td></tr>
        {{/breaks}}
        {{^breaks}}<tr><td colspan="7">No break.</td></tr>{{/breaks}}
        </tbody>
        </table>
        {{#morePages}}<p>Breaks {{shownFrom}}–{{shownTo}} of {{breakCount}}{{#next}}: <a href="{{.}}">next page</a>{{/next}}{{#previous}} · <a href="{{.}}">previous page</a>{{/previous}}</p>{{/morePages}}
        {{/reports}}
        </section>
        {{> foot}}
        """

    /// A settlement run's page, streamed: its head, then a list item per step as the run goes (``runStep``), then
    /// the day's batches (``runEnd``). The browser shows each part as it arrives.
    static let runStart = """
        {{> head}}
        <h1>Settlement run</h1>
        <p role="status">Running: each step appears below as it happens.</p>
        <ol id="run-progress" class="progress">

        """

    static let runStep = """
        <li><code>{{batchID}}</code> {{step}}{{#items}} — {{.}} items{{/items}}{{#detail}} ({{.}}){{/detail}}</li>

        """

    static let runEnd = """
        </ol>
        {{#error}}<p class="error" id="run-error"><code>{{code}}</code> {{message}}</p>{{/error}}
        {{^error}}
        <p class="notice" id="run-done">Settled {{businessDate}} (cut-off {{cutOffAt}}{{#earlyClose}}, {{.}}{{/earlyClose}}).</p>
        <table id="run-batches">
        <caption>The run's batches</caption>
        <thead><tr><th scope="col">Batch</th><th scope="col">Day</th><th scope="col">Currency</th><th scope="col">Stage</th><th scope="col">Captures / refunds</th><th scope="col">Gross</th><th scope="col">Net</th><th scope="col">Payout</th></tr></thead>
        <tbody>
        {{#batches}}<tr><td><a href="{{path}}">{{id}}</a></td><td>{{businessDate}}</td><td>{{currency}}</td><td>{{stage}}</td><td class="num">{{items}}</td><td class="num">{{gross}}</td><td class="num">{{net}}</td><td>{{payout}}</td></tr>
        {{/batches}}
        {{^batches}}<tr><td colspan="8">Nothing to settle: no capture or refund recorded for the day.</td></tr>{{/batches}}
        </tbody>
        </table>
        {{/error}}
        <p><a href="/console/settlements">Back to the batches</a></p>
        {{> foot}}
        """

    static let audit = """
        {{> head}}
        <h1>Audit</h1>
        {{#notice}}<p class="notice" role="status">{{.}}</p>{{/notice}}
        <section aria-labelledby="verify">
        <h2 id="verify">Verify the chain</h2>
        <p>Recompute the hash chain over a range of positions (at most {{window}} per check; empty: from the first).</p>
        <form method="get" action="/console/audit" class="stack">
        <input type="hidden" name="verify" value="1">
        <label for="from">From position</label>
        <input id="from" name="from" inputmode="numeric" value="{{from}}"{{#fromError}} aria-invalid="true" aria-describedby="from-error"{{/fromError}}>
        {{#fromError}}<p class="error" id="from-error"><code>{{code}}</code> {{message}}</p>{{/fromError}}
        <label for="to">To position (empty: the window's end or the head)</label>
        <input id="to" name="to" inputmode="numeric" value="{{to}}"{{#toError}} aria-invalid="true" aria-describedby="to-error"{{/toError}}>
        {{#toError}}<p class="error" id="to-error"><code>{{code}}</code> {{message}}</p>{{/toError}}
        <button type="submit">Verify the chain</button>
        </form>
        </section>
        {{#checkpoints}}
        <section aria-labelledby="checkpoints">
        <h2 id="checkpoints">Signed checkpoints</h2>
        {{#keyMissing}}<p>No signing key is configured (<code>LEDGERD_CHECKPOINT_KEY</code>): the daemon signs no checkpoint.</p>{{/keyMissing}}
        <table id="checkpoints-table">
        <caption>Oldest first; each signature checked against the key it names (compare that key with your own copy), and the log's event at its position against the hash it signed</caption>
        <thead><tr><th scope="col">Position</th><th scope="col">Signed</th><th scope="col">By</th><th scope="col">Chain hash</th><th scope="col">Key</th><th scope="col">Signature</th><th scope="col">Log now</th></tr></thead>
        <tbody>
        {{#rows}}<tr><td class="num">{{position}}</td><td>{{signedAt}}</td><td>{{signedBy}}</td><td><code class="data">{{hash}}</code></td><td><code class="data">{{publicKey}}</code></td><td class="{{#signatureValid}}ok{{/signatureValid}}{{^signatureValid}}bad{{/signatureValid}}">{{#signatureValid}}valid{{/signatureValid}}{{^signatureValid}}INVALID{{/signatureValid}}</td><td class="{{#logMatches}}ok{{/logMatches}}{{^logMatches}}bad{{/logMatches}}">{{#logMatches}}matches{{/logMatches}}{{^logMatches}}DIFFERS{{/logMatches}}</td></tr>
        {{/rows}}
        {{^rows}}<tr><td colspan="7">No checkpoint signed yet.</td></tr>{{/rows}}
        </tbody>
        </table>
        {{#next}}<p><a href="/console/audit?checkpoints_after={{.}}">Later checkpoints</a></p>{{/next}}
        {{#sign}}<form method="post" action="/console/audit/checkpoints" id="sign-form">
        <input type="hidden" name="csrf_token" value="{{csrfToken}}">
        <button type="submit">Sign a checkpoint of the head now</button>
        </form>{{/sign}}
        </section>
        {{/checkpoints}}
        <section aria-labelledby="as-of">
        <h2 id="as-of">An order as of a moment</h2>
        <form method="get" action="/console/audit/as-of" class="filters" id="as-of-form">
        <div class="stack"><label for="as-of-order">Order id</label><input id="as-of-order" name="order" required></div>
        <div class="stack"><label for="as-of-at">Moment (UTC)</label><input id="as-of-at" name="at" type="datetime-local" step="1"></div>
        <div class="stack"><label for="as-of-position">or position</label><input id="as-of-position" name="position" inputmode="numeric"></div>
        <button type="submit">Show</button>
        </form>
        </section>
        <section aria-labelledby="journal">
        <h2 id="journal">The accounting journal</h2>
        <form method="get" action="/console/audit/journal" class="filters" id="journal-form">
        <div class="stack"><label for="journal-day">Day (UTC)</label><input id="journal-day" name="day" type="date" value="{{today}}" required></div>
        <button type="submit">Show the day's journal</button>
        </form>
        </section>
        <section aria-labelledby="exports">
        <h2 id="exports">Exports</h2>
        <form method="get" action="/console/audit/events.jsonl" class="filters" id="events-export-form">
        <div class="stack"><label for="export-from">Events from position</label><input id="export-from" name="from" inputmode="numeric" value="1"></div>
        <div class="stack"><label for="export-to">through position (empty: a million on)</label><input id="export-to" name="to" inputmode="numeric"></div>
        <button type="submit">Download the events (JSONL)</button>
        </form>
        <form method="get" action="/console/audit/journal.csv" class="filters" id="journal-export-form">
        <div class="stack"><label for="export-day">Journal of the day (UTC)</label><input id="export-day" name="day" type="date" value="{{today}}" required></div>
        <button type="submit">Download the journal (CSV)</button>
        </form>
        </section>
        {{> foot}}
        """

    /// A verification's page, streamed: the form, a line per step as the re-hash goes (``verifyStep``), the result.
    static let verifyStart = """
        {{> head}}
        <h1>Verify the chain</h1>
        <form method="get" action="/console/audit" class="filters">
        <input type="hidden" name="verify" value="1">
        <div class="stack"><label for="from">From position</label><input id="from" name="from" inputmode="numeric" value="{{from}}"></div>
        <div class="stack"><label for="to">To position (empty: the window's end or the head)</label><input id="to" name="to" inputmode="numeric" value="{{to}}"></div>
        <button type="submit">Verify the chain</button>
        </form>
        <p role="status">Re-hashing at most {{window}} positions, each step listed as it is done.</p>
        <ol id="verify-progress" class="progress">

        """

    static let verifyStep = """
        <li class="{{#ok}}ok{{/ok}}{{^ok}}bad{{/ok}}">positions {{from}}–{{to}}: {{#ok}}intact{{/ok}}{{^ok}}BROKEN{{/ok}} ({{checked}} re-hashed so far)</li>

        """

    static let verifyEnd = """
        </ol>
        {{#busy}}<p class="error" id="verify-busy"><code>busy</code> two verifications are running already: try again in a moment</p>{{/busy}}
        {{#report}}
        <section aria-labelledby="result">
        <h2 id="result">Result</h2>
        <p id="verify-result" class="{{#ok}}ok{{/ok}}{{^ok}}bad{{/ok}}">{{summary}}</p>
        <dl class="figures">
        <dt>Positions checked</dt><dd id="verify-checked">{{checked}}</dd>
        {{#firstBadPosition}}<dt>First bad position</dt><dd>{{.}}</dd>{{/firstBadPosition}}
        {{#nextFrom}}<dt>Continue from</dt><dd><a href="/console/audit?verify=1&amp;from={{.}}">{{.}}</a></dd>{{/nextFrom}}
        </dl>
        </section>
        {{/report}}
        <p><a href="/console/audit">Back to Audit</a></p>
        {{> foot}}
        """

    static let asOf = """
        {{> head}}
        <h1>An order as of a moment</h1>
        <form method="get" action="/console/audit/as-of" class="stack" id="as-of-form">
        <label for="as-of-order">Order id</label>
        <input id="as-of-order" name="order" value="{{order}}" required{{#orderError}} aria-invalid="true" aria-describedby="as-of-order-error"{{/orderError}}>
        {{#orderError}}<p class="error" id="as-of-order-error"><code>{{code}}</code> {{message}}</p>{{/orderError}}
        <label for="as-of-at">Moment (UTC)</label>
        <input id="as-of-at" name="at" type="datetime-local" step="1" value="{{at}}"{{#atError}} aria-invalid="true" aria-describedby="as-of-at-error"{{/atError}}>
        <label for="as-of-position">or position</label>
        <input id="as-of-position" name="position" inputmode="numeric" value="{{position}}">
        {{#atError}}<p class="error" id="as-of-at-error"><code>{{code}}</code> {{message}}</p>{{/atError}}
        <button type="submit">Show</button>
        </form>
        {{> foot}}
        """

    static let journal = """
        {{> head}}
        <h1>The accounting journal</h1>
        <form method="get" action="/console/audit/journal" class="filters" id="journal-form">
        <div class="stack">
        <label for="journal-day">Day (UTC)</label>
        <input id="journal-day" name="day" type="date" value="{{day}}" required{{#dayError}} aria-invalid="true" aria-describedby="journal-day-error"{{/dayError}}>
        {{#dayError}}<p class="error" id="journal-day-error"><code>{{code}}</code> {{message}}</p>{{/dayError}}
        </div>
        <button type="submit">Show</button>
        </form>
        {{#shown}}
        <p><a href="/console/audit/journal.csv?day={{day}}">Download the day (CSV)</a> · <a href="/console/audit/journal.jsonl?day={{day}}">(JSONL)</a></p>
        <table id="journal-balance">
        <caption>This page's debits and credits by currency</caption>
        <thead><tr><th scope="col">Currency</th><th scope="col">Debit</th><th scope="col">Credit</th><th scope="col">Balance</th></tr></thead>
        <tbody>
        {{#balances}}<tr><td>{{currency}}</td><td class="num">{{debit}}</td><td class="num">{{credit}}</td><td class="{{#balanced}}ok{{/balanced}}{{^balanced}}bad{{/balanced}}">{{#balanced}}balanced{{/balanced}}{{^balanced}}UNBALANCED{{/balanced}}</td></tr>
        {{/balances}}
        {{^balances}}<tr><td colspan="4">No entry on this day.</td></tr>{{/balances}}
        </tbody>
        </table>
        <table id="journal-entries" class="journal">
        <caption>Entries in position order, each with its lines</caption>
        <thead><tr><th scope="col">Position</th><th scope="col">Recorded</th><th scope="col">Event</th><th scope="col">Reference</th><th scope="col">Account</th><th scope="col">Debit</th><th scope="col">Credit</th></tr></thead>
        <tbody>
        {{#rows}}{{#lines}}<tr><td class="num">{{position}}</td><td>{{recordedAt}}</td><td>{{eventType}}</td><td><code>{{reference}}</code></td><td>{{account}} {{name}}</td><td class="num">{{debit}}</td><td class="num">{{credit}}</td></tr>
        {{/lines}}{{/rows}}
        </tbody>
        </table>
        {{#next}}<p><a id="next-page" href="{{.}}">Next page</a></p>{{/next}}
        {{/shown}}
        {{> foot}}
        """

    /// The console's one stylesheet (no inline style anywhere).
    static let stylesheet = """
        :root { color-scheme: light; --ink: #1d232b; --muted: #5b6673; --line: #d5dbe1; --accent: #0b5cad; --bad: #a11a1a; --ok: #1c6b2f; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f7f8fa; }
        .bar { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .6rem 1rem; background: #fff; border-bottom: 1px solid var(--line); }
        .brand { font-weight: 600; color: var(--ink); text-decoration: none; }
        nav ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; }
        nav a, a { color: var(--accent); }
        a:focus, button:focus, input:focus { outline: 3px solid #8ab4e6; outline-offset: 1px; }
        .sign-out { margin-left: auto; display: flex; gap: .5rem; align-items: center; }
        .who { color: var(--muted); }
        main { max-width: 70rem; margin: 0 auto; padding: 1rem; }
        h1 small { font-weight: normal; color: var(--muted); font-size: .6em; }
        section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .5rem 1rem 1rem; margin: 1rem 0; overflow-x: auto; }
        .stack { display: flex; flex-direction: column; gap: .35rem; max-width: 24rem; }
        .actions { display: grid; grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr)); gap: 1rem; }
        .actions form { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem .75rem; }
        h3 { margin: .25rem 0; }
        .filters { display: flex; flex-wrap: wrap; gap: 1rem; align-items: flex-end; }
        select { font: inherit; padding: .3rem .4rem; }
        textarea { font: inherit; padding: .35rem .5rem; border: 1px solid #9aa5b1; border-radius: 4px; }
        input { font: inherit; padding: .35rem .5rem; border: 1px solid #9aa5b1; border-radius: 4px; }
        input[aria-invalid="true"] { border-color: var(--bad); }
        .check input { margin-right: .35rem; }
        button { font: inherit; padding: .4rem .9rem; border: 1px solid var(--accent); border-radius: 4px; background: var(--accent); color: #fff; cursor: pointer; align-self: flex-start; }
        .sign-out button { background: #fff; color: var(--accent); }
        .error { color: var(--bad); margin: .1rem 0; }
        .notice { background: #e7f3ea; border: 1px solid #b7d9c0; padding: .5rem .75rem; border-radius: 4px; }
        .ok { color: var(--ok); font-weight: 600; }
        .bad { color: var(--bad); font-weight: 600; }
        table { border-collapse: collapse; width: 100%; margin: .5rem 0; }
        caption { text-align: left; color: var(--muted); padding: .25rem 0; }
        th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        .num { text-align: right; font-variant-numeric: tabular-nums; }
        .figures { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
        .figures dt { color: var(--muted); }
        .figures dd { margin: 0; }
        .data { font-size: .85em; word-break: break-all; }
        .overdue td { color: var(--bad); }
        .chart { max-width: 100%; height: auto; }
        .chart .bar, .chart .bar-gross { fill: var(--accent); }
        .chart .bar-fees { fill: #c2410c; }
        .chart .bar-net { fill: #15803d; }
        .key::before { content: ""; display: inline-block; width: .8em; height: .8em; margin: 0 .25em 0 .5em; vertical-align: -.05em; }
        .key.bar-gross::before { background: var(--accent); }
        .key.bar-fees::before { background: #c2410c; }
        .key.bar-net::before { background: #15803d; }
        .unhealthy td { color: var(--bad); }
        .chart .axis { stroke: var(--muted); stroke-width: 1; }
        .chart .tick { fill: var(--muted); font-size: 10px; }
        @media (max-width: 40rem) { .sign-out { margin-left: 0; } main { padding: .5rem; } }

        """

    /// The tab's icon, so that the browser's request for one is answered (a 404 would be an error in its console).
    static let favicon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#0b5cad"/><path d="M4 4h2v6h6v2H4z" fill="#fff"/></svg>

        """
}
