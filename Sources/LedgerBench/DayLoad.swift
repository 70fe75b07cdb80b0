import AsyncHTTPClient
import Foundation
import Histogram
import NIOCore
import Synchronization

/// An open-loop load at a fixed offered rate, for `bench/day.sh` (issue 57): requests start on a schedule, not when
/// the previous one returns, and each latency is counted from the moment its request was due — so a daemon that
/// stalls shows it in p99 instead of quietly lowering the rate (wrk's closed loop cannot hold a fixed rate).
///
/// The mix is a storefront's and back office's day: payments over many products with a few hot, partial and final
/// captures, refunds of captured orders, voids, order reads, the back office's order list. Payments on the dispute
/// card give the acquirer model its chargebacks. Orders neither captured nor voided are left to expire (the daemon
/// runs with short hold lifetimes). Every `reportSeconds` it prints one line: the window's offered and completed
/// operations, errors, p50/p99 (ms) overall and per kind.
public final class DayLoad: Sendable {
    /// What to send, how fast and for how long.
    public struct Options: Sendable {
        public var url = "http://127.0.0.1:8080"
        public var apiKey = ""
        public var rate = 200.0
        public var seconds = 60
        public var reportSeconds = 60
        public var products = 240
        public var hotProducts = 3
        public var connections = 64
        public var phase = "day"
        public init() {}
    }

    /// One kind of request in the mix, with its share of every 100 operations.
    enum Kind: String, CaseIterable, Sendable {
        case payment
        case partialCapture = "capture"
        case finalCapture = "final"
        case refund, void, read, list

        var share: Int {
            switch self {
            case .payment: 55
            case .partialCapture: 12
            case .finalCapture: 12
            case .refund: 5
            case .void: 6
            case .read: 7
            case .list: 3
            }
        }
    }

    /// Orders by what can still be done to them. Bounded: the oldest are forgotten (left to expire).
    struct Pools {
        var authorized: [String] = []
        var captured: [String] = []
        static let limit = 20_000
        mutating func add(_ id: String, to pool: WritableKeyPath<Pools, [String]>) {
            self[keyPath: pool].append(id)
            if self[keyPath: pool].count > Self.limit { self[keyPath: pool].removeFirst(Self.limit / 4) }
        }
        mutating func take(from pool: WritableKeyPath<Pools, [String]>) -> String? {
            let count = self[keyPath: pool].count
            guard count > 0 else { return nil }
            self[keyPath: pool].swapAt(Int.random(in: 0..<count), count - 1)
            return self[keyPath: pool].popLast()
        }
        func peek(_ pool: KeyPath<Pools, [String]>) -> String? { self[keyPath: pool].randomElement() }
    }

    /// A window's latencies (µs from due time to reply), overall and per kind, and its counts.
    struct Window {
        var all = Histogram<UInt64>(highestTrackableValue: 600_000_000)
        var byKind: [Kind: Histogram<UInt64>] = [:]
        var errors = 0
        var offered = 0
        var statuses: [Int: Int] = [:]
        /// The last request that got no answer (status 0): why, for the window's line.
        var lastFailure: String?
    }

    let options: Options
    let pools = Mutex(Pools())
    let window = Mutex(Window())
    let counter = Atomic<Int>(0)
    let run = String(UInt64(Date().timeIntervalSince1970), radix: 36)

    public init(options: Options) { self.options = options }

    public func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: options.connections)
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(60))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let interval = 1.0 / options.rate
        let start = ContinuousClock.now
        var nextReport = start + .seconds(options.reportSeconds)
        var minute = 0
        var issued = 0
        // A discarding group: a task group keeps each finished child until it is awaited, and a day's 720,000
        // requests kept that way grew this process to 8 GB by minute 23 (session 8), beside the daemon it measures.
        await withDiscardingTaskGroup { group in
            while true {
                let now = ContinuousClock.now
                let elapsed = Double((now - start).components.seconds) + Double((now - start).components.attoseconds) / 1e18
                if elapsed >= Double(options.seconds) { break }
                let due = Int(elapsed / interval) + 1
                while issued < due {
                    let dueAt = start + .nanoseconds(Int64(Double(issued) * interval * 1e9))
                    issued += 1
                    let kind = pick()
                    group.addTask { await self.send(kind, dueAt: dueAt, client: client) }
                }
                if now >= nextReport {
                    minute += 1
                    report(minute)
                    nextReport = nextReport + .seconds(options.reportSeconds)
                }
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        minute += 1
        report(minute)
        try await client.shutdown()
    }

    func pick() -> Kind {
        var roll = Int.random(in: 0..<100)
        for kind in Kind.allCases {
            if roll < kind.share { return kind }
            roll -= kind.share
        }
        return .payment
    }

    func send(_ wanted: Kind, dueAt: ContinuousClock.Instant, client: HTTPClient) async {
        var kind = wanted
        var order: String? = nil
        switch wanted {
        case .partialCapture, .read: order = pools.withLock { $0.peek(\.authorized) }
        case .finalCapture, .void: order = pools.withLock { $0.take(from: \.authorized) }
        case .refund: order = pools.withLock { $0.take(from: \.captured) }
        case .payment, .list: break
        }
        if wanted != .payment && wanted != .list && order == nil { kind = .payment }
        let n = counter.add(1, ordering: .relaxed).newValue
        var request: HTTPClientRequest
        switch kind {
        case .payment:
            // Half the payments on the few hot products, the rest spread over the catalogue; 1 in 50 on the card the
            // acquirer model disputes once its capture settles.
            let product = Bool.random() ? Int.random(in: 1...options.hotProducts) : Int.random(in: 1...options.products)
            let card = n % 50 == 0 ? "tok_visa_chargeback_fraud" : "tok_visa"
            request = HTTPClientRequest(url: options.url + "/payment")
            request.method = .POST
            request.body = .bytes(
                ByteBuffer(
                    string: """
                        {"gateway":"stripe","source":"\(card)","amount":1580,"currency":"USD","description":"Item \(product)",\
                        "shipping_contact":"Jane Appleseed","shipping_email":"jane@example.com","shipping_street":"1 Infinite Loop",\
                        "shipping_city":"Cupertino","shipping_state":"CA","shipping_zip":"95014","shipping_method_name":"Standard"}
                        """
                )
            )
        case .partialCapture, .finalCapture, .refund, .void:
            let path = ["capture": "capture", "final": "capture", "refund": "refund", "void": "void"][kind.rawValue]!
            request = HTTPClientRequest(url: options.url + "/orders/\(order!)/\(path)")
            request.method = .POST
            request.headers.add(name: "Idempotency-Key", value: "day-\(run)-\(n)")
            let body =
                switch kind {
                case .partialCapture: #"{"amount":"0.01"}"#
                case .finalCapture: #"{"final":true}"#
                case .refund: #"{"amount":"0.01","reason":"customer request"}"#
                default: "{}"
                }
            request.body = .bytes(ByteBuffer(string: body))
        case .read:
            request = HTTPClientRequest(url: options.url + "/orders/\(order!)")
        case .list:
            request = HTTPClientRequest(url: options.url + "/orders?limit=50")
        }
        request.headers.add(name: "Content-Type", value: "application/json")
        if kind != .payment { request.headers.add(name: "Authorization", value: "Bearer \(options.apiKey)") }
        var status = 0
        do {
            let response = try await client.execute(request, timeout: .seconds(60))
            status = Int(response.status.code)
            let body = try await response.body.collect(upTo: 4 << 20)
            if status == 200, kind == .payment,
                let reply = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any],
                let id = reply["order_id"] as? String
            {
                pools.withLock { $0.add(id, to: \.authorized) }
            }
            if status == 200, kind == .finalCapture, let order { pools.withLock { $0.add(order, to: \.captured) } }
        } catch {
            status = 0
            let failure = String(describing: error)
            window.withLock { $0.lastFailure = failure }
        }
        let micros = UInt64(max(0, (ContinuousClock.now - dueAt) / .microseconds(1)))
        window.withLock { window in
            window.offered += 1
            _ = window.all.record(micros)
            _ = window.byKind[kind, default: Histogram<UInt64>(highestTrackableValue: 600_000_000)].record(micros)
            window.statuses[status, default: 0] += 1
            // 402 (declined) and 409 on a hold that expired or closed meanwhile are answers, not failures.
            if !(200..<300).contains(status) && status != 402 && status != 409 { window.errors += 1 }
        }
    }

    func report(_ minute: Int) {
        let done = window.withLock { window in
            let done = window
            window = Window()
            return done
        }
        func ms(_ h: Histogram<UInt64>, _ p: Double) -> String {
            String(format: "%.1f", Double(h.totalCount == 0 ? 0 : h.valueAtPercentile(p)) / 1000)
        }
        let kinds = Kind.allCases.compactMap { kind in
            done.byKind[kind].map { "\(kind.rawValue) \($0.totalCount)/\(ms($0, 99))" }
        }
        let statuses = done.statuses.sorted { $0.key < $1.key }.map { "\($0.key)x\($0.value)" }.joined(separator: ",")
        let line =
            ("load \(options.phase) window \(minute): ops \(done.all.totalCount) ops/s "
                + String(format: "%.0f", Double(done.all.totalCount) / Double(options.reportSeconds))
                + " p50 \(ms(done.all, 50)) ms p99 \(ms(done.all, 99)) ms errors \(done.errors) status \(statuses)"
                + " | " + kinds.joined(separator: " ") + (done.lastFailure.map { " | no answer: \($0)" } ?? ""))
        // Written at once, unbuffered: bench/day.sh reads the lines as they come.
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
