import Crypto
import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerEngine

/// The invariants the simulator checks after every operation, on the log as it is (not the services' caches): each new
/// event is folded once into states of its own, and what the events touched is checked — code that runs in release
/// builds, never an `assert`. The catalogue (docs/architecture.md, "The simulator"):
///
/// - **chain**: each new event takes the next position, links to the previous hash, and its hash is the SHA-256 of
///   that hash and its canonical layout (``CanonicalEventLayout``): the chain verifies, incrementally;
/// - **stock**, per product touched: received = on hand + sold, available ≥ 0; reserved = Σ of the lines of the orders
///   that hold stock (``OrderState/holdsStock``) and sold = Σ of the lines of the orders that shipped — both summed
///   from the orders' own streams, so a product and its orders never disagree;
/// - **hold money**, per hold touched: authorized + incremented = captured + reversed + expired + open, refunded ≤
///   captured, no part negative (``HoldBalance/satisfiesIdentity``);
/// - **the ledger's books against the acquirer's**, per order touched (and the one an operation aimed at): the hold's
///   authorized, incremented, captured, reversed and refunded amounts equal the acquirer model's for its reference,
///   its open + expired too (the acquirer lapses holds by its clock before the sweep records it); an order the ledger
///   says is decided without a hold has none at the acquirer;
/// - at the end (``everything(_:)``), every hold against the acquirer, and the acquirer model's own invariants.
///
/// Replays and refusals are checked by the operations themselves (``Simulator``).
final class SimulatorChecks {
    private let log: InMemoryEventLog
    private let model: AcquirerModel
    /// Every aggregate, folded from the log's events.
    private(set) var states = AggregateStates()
    private var position: Int64 = 0
    private var lastHash = ChainHead.genesis.hash
    /// Per product: Σ of the lines of orders that hold stock, and of orders that shipped.
    private var reservedByOrders: [ProductID: Int64] = [:]
    private var soldByOrders: [ProductID: Int64] = [:]
    /// The orders the last operation's events touched.
    private(set) var touchedOrders: [OrderID] = []
    /// Checks run so far.
    private(set) var count = 0

    init(log: InMemoryEventLog, model: AcquirerModel) {
        self.log = log
        self.model = model
    }

    /// The storefront's total for `quantity` of `product` shipped by `method` (nil: either is not listed).
    func price(product id: ProductID, quantity: Int64, method name: String) throws -> Money? {
        guard let product = states.products[id], let method = states.shippingMethods.values.first(where: { $0.name == name }) else { return nil }
        let line = PricingLine(productID: id, name: product.name, unitPrice: product.price, quantity: quantity)
        return try OrderPricing.price(lines: [line], shipping: method.price, policy: .storefront).get().amounts.total
    }

    /// Reads the events `operation` appended, folds them, and checks what they touched, with `aimedAt`; the books of an
    /// order in `unrecorded` (a hold operation noted, its answer not recorded: the acquirer may have applied it) wait for
    /// recovery.
    func afterOperation(_ operation: Int, touching aimedAt: [OrderID], unrecorded: Set<String> = []) async throws {
        let appended = await log.events(after: position)
        var orders: [OrderID] = []
        var seenOrders = Set<OrderID>()
        var products = Set<ProductID>()
        var before: [OrderID: OrderState?] = [:]
        func touch(_ id: OrderID) {
            guard seenOrders.insert(id).inserted else { return }
            orders.append(id)
            before[id] = states.orders[id]
        }
        for recorded in appended {
            try chain(recorded, operation)
            let event: DomainEvent
            do { event = try DomainEvent.decode(recorded) } catch {
                throw fail(operation, "events decode", "position \(recorded.position) (\(recorded.type)): \(error)")
            }
            switch event {
            case .product(let e): products.insert(e.productID)
            case .shippingMethod: break
            case .order(let e): touch(e.orderID)
            case .hold(let e): touch(e.orderID)
            }
            states.apply(event)
        }
        for id in orders { products.formUnion(stockMoved(id, from: before[id] ?? nil)) }
        for id in products.sorted(by: { $0.rawValue < $1.rawValue }) { try stock(id, operation) }
        let acquirer = await model.currentState
        for id in orders + aimedAt.filter({ !seenOrders.contains($0) }) {
            try holdMoney(id, operation)
            if !unrecorded.contains(id.rawValue) { try books(id, acquirer, operation) }
        }
        touchedOrders = orders
    }

    /// Every hold against the acquirer, and the acquirer model's own invariants: the end of a run.
    func everything(_ operation: Int) async throws {
        let acquirer = await model.currentState
        for id in states.orders.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            try holdMoney(id, operation)
            try books(id, acquirer, operation)
        }
        for id in states.products.keys.sorted(by: { $0.rawValue < $1.rawValue }) { try stock(id, operation) }
        count += 1
        let problems = acquirer.invariantViolations()
        if !problems.isEmpty { throw fail(operation, "acquirer model", problems.prefix(5).joined(separator: "; ")) }
    }

    private func fail(_ operation: Int, _ check: String, _ detail: String) -> Simulator.Failure {
        Simulator.Failure(operation: operation, check: check, detail: detail)
    }

    private func chain(_ event: RecordedEvent, _ operation: Int) throws {
        count += 1
        guard event.position == position + 1 else { throw fail(operation, "chain", "position \(event.position) follows \(position)") }
        guard event.prevHash == lastHash else { throw fail(operation, "chain", "position \(event.position): prev_hash is not the previous hash") }
        let hash = Array(SHA256.hash(data: CanonicalEventLayout.hashInput(prevHash: lastHash, event: event)))
        guard event.hash == hash else { throw fail(operation, "chain", "position \(event.position): the hash is not its contents'") }
        position = event.position
        lastHash = hash
    }

    /// Moves the orders' sums of order `id` from what it was to what it is; the products it names.
    private func stockMoved(_ id: OrderID, from old: OrderState?) -> [ProductID] {
        guard let order = states.orders[id] else { return [] }
        let wasHolding = old?.holdsStock ?? false
        let wasSold = old.map { $0.shipment != nil && !$0.holdsStock } ?? false
        let sold = order.shipment != nil && !order.holdsStock
        for line in order.lines {
            reservedByOrders[line.productID, default: 0] += (order.holdsStock ? line.quantity : 0) - (wasHolding ? line.quantity : 0)
            soldByOrders[line.productID, default: 0] += (sold ? line.quantity : 0) - (wasSold ? line.quantity : 0)
        }
        return order.lines.map(\.productID)
    }

    private func stock(_ id: ProductID, _ operation: Int) throws {
        count += 1
        guard let product = states.products[id] else { throw fail(operation, "stock", "orders name \(id), which is not listed") }
        let (reserved, sold) = (reservedByOrders[id] ?? 0, soldByOrders[id] ?? 0)
        guard product.received == product.onHand + product.sold, product.available >= 0, product.onHand >= 0 else {
            throw fail(
                operation,
                "stock",
                "\(id): received \(product.received), on hand \(product.onHand), sold \(product.sold), available \(product.available)"
            )
        }
        guard product.reserved == reserved, product.sold == sold else {
            throw fail(
                operation,
                "stock",
                "\(id): reserved \(product.reserved) and sold \(product.sold), but its orders hold \(reserved) and shipped \(sold)"
            )
        }
    }

    private func holdMoney(_ id: OrderID, _ operation: Int) throws {
        count += 1
        guard let hold = states.holds[id] else { return }
        guard hold.balance.satisfiesIdentity else { throw fail(operation, "hold money", "\(id): \(hold.balance)") }
    }

    private func books(_ id: OrderID, _ acquirer: AcquirerModelState, _ operation: Int) throws {
        count += 1
        guard let order = states.orders[id] else { return }
        let theirs = acquirer.balance(of: order.merchantReference)
        guard let hold = states.holds[id] else {
            // Decided without a hold (declined, cancelled): nothing may be held at the acquirer.
            if !order.status.awaitsPayment, let theirs, theirs.open.minorUnits + theirs.captured.minorUnits > 0 {
                throw fail(operation, "books", "\(id) is \(order.status.rawValue) without a hold, but the acquirer holds \(theirs)")
            }
            return
        }
        guard let theirs else { throw fail(operation, "books", "\(id) has a hold the acquirer does not know (\(hold.merchantReference))") }
        let ours = hold.balance
        let same =
            ours.authorized == theirs.authorized && ours.incremented == theirs.incremented && ours.captured == theirs.captured
            && ours.reversed == theirs.reversed && ours.refunded == theirs.refunded
            && ours.open.minorUnits + ours.expired.minorUnits == theirs.open.minorUnits + theirs.expired.minorUnits
        guard same else { throw fail(operation, "books", "\(id): the ledger's hold \(ours), the acquirer's \(theirs)") }
    }
}
