import Foundation
import LedgerCore
import LedgerEngine
import Logging

/// `ledgerd catalog import FILE`: loads a catalog from JSON or CSV as events.
///
/// - A product or shipping method not yet in the ledger is listed (a product with `stock` units).
/// - An existing one whose price differs gets a price-change event.
/// - For a product, `stock` is the wanted quantity on hand: more than on hand → stock received for
///   the difference; the same → nothing; less → refused (there is no write-off event yet).
/// Re-importing the same file therefore appends nothing. The whole import is one atomic append:
/// a file with any bad entry appends nothing at all.
///
/// JSON: `{"products": [{"id"?, "name", "description", "image_file"?, "price": "50.00",
/// "currency"?: "USD", "stock": 10}], "shipping_methods": [{"id"?, "name", "description",
/// "transit_days": 4, "price": "5.00", "currency"?}]}`. CSV: a header row with
/// `kind,id,name,description,image_file,price,currency,stock,transit_days` (`kind` is `product` or
/// `shipping`; unused columns may be empty). Ids default to the name's slug, images to `<id>.png`.
public struct CatalogImport: Sendable {
    public struct Entry: Sendable, Hashable {
        public enum Kind: String, Sendable { case product, shipping }
        public var kind: Kind
        public var id: String
        public var name: String
        public var description: String
        public var imageFile: String
        public var price: Money
        public var stock: Int64
        public var transitDays: Int
    }

    public struct Report: Sendable, Hashable, CustomStringConvertible {
        public var listed: [String] = []
        public var priceChanged: [String] = []
        public var stockReceived: [String] = []
        public var unchanged: [String] = []
        public var warnings: [String] = []

        public var description: String {
            var lines = [
                "listed: \(listed.count)", "price changed: \(priceChanged.count)",
                "stock received: \(stockReceived.count)", "unchanged: \(unchanged.count)",
            ]
            lines += warnings.map { "warning: \($0)" }
            return lines.joined(separator: "\n")
        }
    }

    public let entries: [Entry]

    /// Parses a file's contents; `format` is `json` or `csv` (by default from the extension).
    public static func parse(_ text: String, format: String) throws -> CatalogImport {
        switch format.lowercased() {
        case "json": return CatalogImport(entries: try parseJSON(text))
        case "csv": return CatalogImport(entries: try parseCSV(text))
        default: throw ConfigurationError("unknown catalog format \(format): use json or csv")
        }
    }

    static func entry(
        kind: Entry.Kind,
        id: String?,
        name: String?,
        description: String?,
        imageFile: String?,
        price: String?,
        currency: String?,
        stock: String?,
        transitDays: String?,
        at place: String
    ) throws -> Entry {
        func fail(_ why: String) -> ConfigurationError { ConfigurationError("\(place): \(why)") }
        guard let name = name?.trimmingCharacters(in: .whitespaces), !name.isEmpty else { throw fail("name is required") }
        let id = (id?.isEmpty == false ? id! : DomainIdentifierRules.slug(name))
        guard let currency = Currency(code: currency?.isEmpty == false ? currency! : "USD") else { throw fail("unknown currency") }
        guard let priceText = price, let money = try? Money(decimal: priceText, currency: currency), !money.isNegative else {
            throw fail("price must be a decimal amount such as 50.00")
        }
        var stockValue: Int64 = 0
        var days = 0
        if kind == .product {
            guard let stock, let value = Int64(stock), value >= 0 else { throw fail("stock must be a whole number ≥ 0") }
            stockValue = value
        } else {
            guard let transitDays, let value = Int(transitDays), value >= 0 else { throw fail("transit_days must be a whole number ≥ 0") }
            days = value
        }
        return Entry(
            kind: kind,
            id: id,
            name: name,
            description: description ?? "",
            imageFile: imageFile?.isEmpty == false ? imageFile! : "\(id).png",
            price: money,
            stock: stockValue,
            transitDays: days
        )
    }

    /// A JSON scalar as the file has it: JSONDecoder keeps strings, integers and booleans apart.
    enum Scalar: Decodable {
        case string(String)
        case integer(Int64)
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if (try? container.decode(Bool.self)) != nil {
                self = .other
            } else if let integer = try? container.decode(Int64.self) {
                self = .integer(integer)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else {
                self = .other
            }
        }

        var text: String? {
            switch self {
            case .string(let text): return text
            case .integer(let integer): return String(integer)
            case .other: return nil
            }
        }
    }

    static func parseJSON(_ text: String) throws -> [Entry] {
        guard let object = try? JSONDecoder().decode([String: [[String: Scalar]]].self, from: Data(text.utf8)) else {
            throw ConfigurationError("the catalog must be a JSON object with \"products\" and/or \"shipping_methods\" arrays of objects")
        }
        var entries: [Entry] = []
        for (kind, key) in [(Entry.Kind.product, "products"), (.shipping, "shipping_methods")] {
            for (index, item) in (object[key] ?? []).enumerated() {
                if case .integer = item["price"] {
                    throw ConfigurationError("\(key)[\(index)]: price must be a decimal string such as \"50.00\", not a number")
                }
                entries.append(
                    try entry(
                        kind: kind,
                        id: item["id"]?.text,
                        name: item["name"]?.text,
                        description: item["description"]?.text,
                        imageFile: item["image_file"]?.text,
                        price: item["price"]?.text,
                        currency: item["currency"]?.text,
                        stock: item["stock"]?.text,
                        transitDays: item["transit_days"]?.text,
                        at: "\(key)[\(index)]"
                    )
                )
            }
        }
        return entries
    }

    static func parseCSV(_ text: String) throws -> [Entry] {
        let records = try CSVReader.records(text).filter { !($0.count == 1 && $0[0].isEmpty) }
        guard let header = records.first?.map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }),
            let kindColumn = header.firstIndex(of: "kind")
        else {
            throw ConfigurationError("the CSV needs a header row with kind,id,name,description,image_file,price,currency,stock,transit_days")
        }
        var entries: [Entry] = []
        for (offset, record) in records.dropFirst().enumerated() {
            func field(_ name: String) -> String? {
                header.firstIndex(of: name).flatMap { $0 < record.count ? record[$0].trimmingCharacters(in: .whitespaces) : nil }
            }
            let place = "row \(offset + 2)"
            guard kindColumn < record.count, let kind = Entry.Kind(rawValue: record[kindColumn].trimmingCharacters(in: .whitespaces)) else {
                throw ConfigurationError("\(place): kind must be product or shipping")
            }
            entries.append(
                try entry(
                    kind: kind,
                    id: field("id"),
                    name: field("name"),
                    description: field("description"),
                    imageFile: field("image_file"),
                    price: field("price"),
                    currency: field("currency"),
                    stock: field("stock"),
                    transitDays: field("transit_days"),
                    at: place
                )
            )
        }
        return entries
    }

    /// Decides the import against the ledger's current catalog and appends it atomically: a command on the runner,
    /// decided in the writer's batch on the catalog's states (again on fresh ones when another process moved them).
    package func run(aggregates: AggregateStore, now: Date, logger: Logger) async throws -> Report {
        var reads = AggregateKeys()
        for entry in entries {
            switch entry.kind {
            case .product:
                guard let id = ProductID(entry.id) else { throw ConfigurationError("invalid product id \(entry.id)") }
                reads.products.append(id)
            case .shipping:
                guard let id = ShippingMethodID(entry.id) else { throw ConfigurationError("invalid shipping method id \(entry.id)") }
                reads.shippingMethods.append(id)
            }
        }
        let metadata = EventMetadata(actor: "operator:cli", command: "ImportCatalog")
        let entries = self.entries
        let command = Signalled<Report>(reads: reads, now: now, metadata: metadata) { states in
            var report = Report()
            var plan: [PlannedAppend] = []
            let context = DecisionContext(now: now)
            for entry in entries {
                switch entry.kind {
                case .product:
                    guard let id = ProductID(entry.id) else { throw ConfigurationError("invalid product id \(entry.id)") }
                    let state = states.products[id]
                    var commands: [ProductCommand] = []
                    if let state {
                        if state.price != entry.price {
                            commands.append(.changePrice(entry.price))
                            report.priceChanged.append(entry.id)
                        }
                        if entry.stock > state.onHand {
                            commands.append(.receiveStock(quantity: entry.stock - state.onHand))
                            report.stockReceived.append(entry.id)
                        } else if entry.stock < state.onHand {
                            throw ConfigurationError(
                                "product \(entry.id): stock \(entry.stock) is below the \(state.onHand) on hand; lowering stock is not supported"
                            )
                        }
                        if state.name != entry.name || state.description != entry.description || state.imageFile != entry.imageFile {
                            report.warnings.append(
                                "product \(entry.id): name, description and picture of a listed product are not changed by an import"
                            )
                        }
                        if commands.isEmpty { report.unchanged.append(entry.id) }
                    } else {
                        commands.append(
                            .list(
                                sku: nil,
                                name: entry.name,
                                description: entry.description,
                                imageFile: entry.imageFile,
                                price: entry.price,
                                initialStock: entry.stock
                            )
                        )
                        report.listed.append(entry.id)
                    }
                    var current = state
                    var events: [DomainEvent] = []
                    for command in commands {
                        switch ProductDecider.decide(command, product: id, state: current, context: context) {
                        case .failure(let rejection): throw ConfigurationError("product \(entry.id): \(rejection)")
                        case .success(let decided):
                            for event in decided { current = ProductState.evolve(current, event) }
                            events += decided.map(DomainEvent.product)
                        }
                    }
                    if !events.isEmpty {
                        plan.append(
                            PlannedAppend(
                                streamID: id.streamID,
                                expectedVersion: PlannedAppend.expectation(forVersion: state?.version ?? 0),
                                events: events
                            )
                        )
                    }
                case .shipping:
                    guard let id = ShippingMethodID(entry.id) else { throw ConfigurationError("invalid shipping method id \(entry.id)") }
                    let state = states.shippingMethods[id]
                    let command: ShippingMethodCommand?
                    if let state {
                        command = state.price != entry.price ? .changePrice(entry.price) : nil
                        if command == nil { report.unchanged.append(entry.id) } else { report.priceChanged.append(entry.id) }
                    } else {
                        command = .list(name: entry.name, description: entry.description, transitDays: entry.transitDays, price: entry.price)
                        report.listed.append(entry.id)
                    }
                    if let command {
                        switch ShippingMethodDecider.decide(command, method: id, state: state, context: context) {
                        case .failure(let rejection): throw ConfigurationError("shipping method \(entry.id): \(rejection)")
                        case .success(let events):
                            plan.append(
                                PlannedAppend(
                                    streamID: id.streamID,
                                    expectedVersion: PlannedAppend.expectation(forVersion: state?.version ?? 0),
                                    events: events.map(DomainEvent.shippingMethod)
                                )
                            )
                        }
                    }
                }
            }
            return plan.isEmpty ? .nothing(report) : .append(CommandPlan(plan: AppendPlan(plan)), report)
        }
        do {
            return try await aggregates.run(command).signal
        } catch is AggregateStore.Contended {
            throw ConfigurationError("the catalog kept changing during the import; try again")
        }
    }
}
