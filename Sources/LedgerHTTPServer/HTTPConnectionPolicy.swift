import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Synchronization

/// The time and connection bounds of an HTTP/1.1 server, shared by the ledger (`ledgerd serve`) and the acquirer
/// service (`ledgerd acquirer serve`), so that both refuse the same slow and greedy clients in the same way.
///
/// - `idleTimeout`: a connection that sends nothing this long is closed (Hummingbird's idle handler).
/// - `headerTimeout`: a request head not complete this long after its first byte closes the connection.
/// - `bodyTimeout`, `bodyMinimumBytesPerSecond`: Apache `mod_reqtimeout`'s `body=20,MinRate=500`. A body must end
///   within `bodyTimeout` of its head, and each `bodyMinimumBytesPerSecond` bytes received extend that by one second:
///   an upload at any honest speed finishes, a body trickled a byte now and then is closed after `bodyTimeout`.
/// - `writeTimeout`: a connection whose reply has not advanced this long — bytes waiting, none taken by the client —
///   is closed (review 4, M5: Hummingbird's idle timer does nothing while a reply is in progress, so a client that
///   stopped reading held its connection, its export's slot and its buffers for ever).
/// - `maximumConnections`, `maximumConnectionsPerClient`: a connection beyond either (all addresses, or its own
///   address; an IPv6 client's /64, review 4, L4) is closed at once, so that one address cannot take every slot.
///   Beyond `maximumConnections`, `healthReserve` more are admitted for one `GET /health` each, so a monitor still
///   sees the server when others hold every slot.
public struct HTTPConnectionPolicy: Sendable {
    public var idleTimeout: Duration
    public var headerTimeout: Duration
    public var bodyTimeout: Duration
    public var bodyMinimumBytesPerSecond: Int
    public var writeTimeout: Duration
    public var maximumConnections: Int
    public var maximumConnectionsPerClient: Int
    public var healthReserve: Int

    public init(
        idleTimeout: Duration = .seconds(30),
        headerTimeout: Duration = .seconds(10),
        bodyTimeout: Duration = .seconds(20),
        bodyMinimumBytesPerSecond: Int = 500,
        writeTimeout: Duration = .seconds(30),
        maximumConnections: Int = 1024,
        maximumConnectionsPerClient: Int = 128,
        healthReserve: Int = 4
    ) {
        precondition(bodyMinimumBytesPerSecond >= 1 && maximumConnections >= 1 && maximumConnectionsPerClient >= 1 && healthReserve >= 0)
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.bodyMinimumBytesPerSecond = bodyMinimumBytesPerSecond
        self.writeTimeout = writeTimeout
        self.maximumConnections = maximumConnections
        self.maximumConnectionsPerClient = maximumConnectionsPerClient
        self.healthReserve = healthReserve
    }

    /// Hummingbird's HTTP/1 configuration with these bounds: one ``ConnectionLimit`` for the server, and per
    /// connection its ``ConnectionLimitHandler``, ``RequestDeadlineHandler`` and ``WriteProgressHandler``.
    public func http1Configuration(logger: Logger) -> HTTP1Channel.Configuration {
        let limit = ConnectionLimit(maximum: maximumConnections, perClient: maximumConnectionsPerClient, healthReserve: healthReserve, logger: logger)
        let deadlines = RequestDeadlines(
            head: TimeAmount(headerTimeout),
            body: TimeAmount(bodyTimeout),
            bodyMinimumBytesPerSecond: bodyMinimumBytesPerSecond
        )
        let write = TimeAmount(writeTimeout)
        var http = HTTP1Channel.Configuration(additionalChannelHandlers: [], idleTimeout: TimeAmount(idleTimeout))
        http.additionalChannelHandlers = {
            [
                ConnectionLimitHandler(limit: limit), RequestDeadlineHandler(deadlines: deadlines, logger: logger),
                WriteProgressHandler(timeout: write, logger: logger),
            ]
        }
        return http
    }
}

/// How many HTTP connections are open, in all and per client, shared by every connection's ``ConnectionLimitHandler``.
/// A client is its address, or for IPv6 its /64 (``client(ofAddress:)``).
public final class ConnectionLimit: Sendable {
    /// Why a connection was refused, or that it was admitted for `GET /health` only.
    public enum Refusal: String, Sendable { case server, client, healthOnly }

    public let maximum: Int
    public let perClient: Int
    /// Connections admitted beyond `maximum`, each for one `GET /health`.
    public let healthReserve: Int
    let logger: Logger
    let refusals = LogThrottle()
    private let open = Mutex<(total: Int, byClient: [String: Int])>((0, [:]))

    public init(maximum: Int, perClient: Int, healthReserve: Int = 0, logger: Logger) {
        self.maximum = maximum
        self.perClient = perClient
        self.healthReserve = healthReserve
        self.logger = logger
    }

    /// The client an address belongs to: an IPv4 address itself (an IPv4-mapped IPv6 one too), an IPv6 address its
    /// /64 (review 4, L4: one subscriber's /64 is as many addresses as it likes, so a cap per exact address bounded
    /// nothing), as `2001:db8:0:1::/64`. Text that is not an IPv6 address is its own client.
    public static func client(ofAddress address: String) -> String {
        guard address.contains(":"), case .v6(let v6)? = try? SocketAddress(ipAddress: address, port: 0) else { return address }
        let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// Counts a new connection from `address` (without the port); a refusal when it is one too many, in all or from
    /// that client, or `.healthOnly` when it is taken from the reserve (it still counts until ``closed(address:)``).
    public func opened(address: String) -> Refusal? {
        let client = Self.client(ofAddress: address)
        return open.withLock { open in
            open.total += 1
            let fromClient = open.byClient[client, default: 0] + 1
            open.byClient[client] = fromClient
            if open.total > maximum + healthReserve { return .server }
            if fromClient > perClient { return .client }
            return open.total > maximum ? .healthOnly : nil
        }
    }

    public func closed(address: String) {
        let client = Self.client(ofAddress: address)
        open.withLock { open in
            open.total -= 1
            let left = open.byClient[client, default: 1] - 1
            open.byClient[client] = left > 0 ? left : nil
        }
    }
}

/// Counts its connection in a ``ConnectionLimit`` and closes it at once when a limit is exceeded. A connection from the
/// reserve is served one `GET /health` (any other request closes it unanswered) and closed after its reply.
final class ConnectionLimitHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    let limit: ConnectionLimit
    private var healthOnly = false

    init(limit: ConnectionLimit) { self.limit = limit }

    func handlerAdded(context: ChannelHandlerContext) {
        // The address without the port: one client's connections come from many ports.
        let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        let refusal = limit.opened(address: address)
        let limit = self.limit
        context.channel.closeFuture.whenComplete { _ in limit.closed(address: address) }
        guard let refusal else { return }
        if refusal == .healthOnly {
            healthOnly = true
            return
        }
        let metadata: Logger.Metadata =
            refusal == .server
            ? ["limit": "\(limit.maximum)"] : ["limit_per_client": "\(limit.perClient)", "client": "\(ConnectionLimit.client(ofAddress: address))"]
        limit.refusals.log(.warning, "connection refused: the HTTP connection limit is reached", metadata: metadata, to: limit.logger)
        context.channel.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if healthOnly, case .head(let head) = unwrapInboundIn(data),
            head.method != .get || head.path?.split(separator: "?", maxSplits: 1).first != "/health"
        {
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard healthOnly, case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        // The reserve's one reply is written: the slot is given back.
        let written = promise ?? context.eventLoop.makePromise()
        // The future completes on this channel's event loop: the context, bound to it, is used there only.
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in bound.value.close(promise: nil) }
        context.write(data, promise: written)
    }
}

/// Closes a connection whose reply has not advanced for `timeout`: bytes written and waiting, none of them taken by
/// the client (its socket's buffer full) since. Hummingbird's idle timer does nothing while a reply is in progress,
/// and its writer waits for as long as the socket is not writable. A reply that makes nothing to send for a while (an
/// event stream between events) is not late: only bytes waiting count.
final class WriteProgressHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny
    let timeout: TimeAmount
    let logger: Logger
    /// Writes handed on whose promise has not completed (not yet taken by the socket).
    private var waiting = 0
    /// When a write last completed, or the first of those waiting was made.
    private var progressed = NIODeadline.now()
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let written = promise ?? context.eventLoop.makePromise()
        if waiting == 0 { progressed = .now() }
        waiting += 1
        if timer == nil { schedule(at: progressed + timeout, context: context) }
        written.futureResult.assumeIsolated().whenComplete { [self] _ in
            waiting -= 1
            progressed = .now()
        }
        context.write(data, promise: written)
    }

    private func schedule(at deadline: NIODeadline, context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard waiting > 0 else { return }
            let due = progressed + timeout
            if due > .now() {
                schedule(at: due, context: context)
                return
            }
            logger.notice("connection closed: its reply did not advance in time", metadata: ["timeout": "\(timeout)"])
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }
}

/// The head and body deadlines of every request on a connection.
struct RequestDeadlines: Sendable {
    let head: TimeAmount
    let body: TimeAmount
    let bodyMinimumBytesPerSecond: Int
}

/// Places the two watchers of a connection's ``RequestDeadline`` around NIO's request decoder.
///
/// The idle timeout alone bounds neither a head nor a body: a client that sends a byte now and then is never idle.
/// So ``RequestBytesWatcher`` (before the decoder, on the raw or decrypted bytes) starts the head's timer at the first
/// byte of a request, and ``RequestHeadWatcher`` (after it) sees the head complete, counts the body's decoded bytes and
/// sees the request end. Between a request's end and the next request's first byte nothing runs: the idle timeout covers that.
/// Hummingbird adds this handler after its HTTP codec (its `additionalChannelHandlers`).
final class RequestDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let deadlines: RequestDeadlines
    let logger: Logger

    init(deadlines: RequestDeadlines, logger: Logger) {
        self.deadlines = deadlines
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let deadline = RequestDeadline(deadlines: deadlines, logger: logger)
        do {
            let pipeline = context.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(RequestBytesWatcher(deadline: deadline), position: .before(decoder))
            try pipeline.addHandler(RequestHeadWatcher(deadline: deadline), position: .after(decoder))
        } catch {
            logger.error("HTTP pipeline without a request decoder: the request timeouts cannot run", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }
}

/// One connection's request timer, shared by its two watchers (both run on the connection's event loop).
///
/// Before a head is complete the timer is the head's (fixed from its first byte); from the head to the request's end
/// it is the body's, whose deadline moves later by a second per `bodyMinimumBytesPerSecond` bytes received. Firing
/// before its deadline (the deadline moved), it is scheduled again; at its deadline it closes the connection.
final class RequestDeadline {
    let deadlines: RequestDeadlines
    let logger: Logger
    /// Between a request's head and its end: the bytes are its body.
    private(set) var inRequest = false
    private var timer: Scheduled<Void>?
    private var bodyDeadline: NIODeadline?
    /// Body bytes not yet turned into whole seconds of extension.
    private var bodyBytes = 0

    init(deadlines: RequestDeadlines, logger: Logger) {
        self.deadlines = deadlines
        self.logger = logger
    }

    /// Bytes arrived before the decoder: outside a request, the first starts the head's timer.
    func bytesArrived(context: ChannelHandlerContext) {
        guard !inRequest, timer == nil else { return }
        let (timeout, logger) = (deadlines.head, logger)
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            logger.notice("connection closed: its request head was not complete in time", metadata: ["timeout": "\(timeout)"])
            context.close(promise: nil)
        }
    }

    /// Body bytes decoded: each `bodyMinimumBytesPerSecond` of them move the body's deadline a second later. Counted
    /// after the decoder, so that body bytes arriving in the same read as their head count too (counted before it,
    /// they arrived while the head was still being read and earned nothing).
    func bodyArrived(_ count: Int) {
        guard inRequest, let deadline = bodyDeadline else { return }
        bodyBytes += count
        let seconds = bodyBytes / deadlines.bodyMinimumBytesPerSecond
        bodyBytes -= seconds * deadlines.bodyMinimumBytesPerSecond
        bodyDeadline = deadline + .seconds(Int64(seconds))
    }

    func headComplete(context: ChannelHandlerContext) {
        stop()
        inRequest = true
        bodyBytes = 0
        let deadline = NIODeadline.now() + deadlines.body
        bodyDeadline = deadline
        scheduleBodyCheck(at: deadline, context: context)
    }

    private func scheduleBodyCheck(at deadline: NIODeadline, context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard let current = bodyDeadline else { return }
            if current > .now() {
                scheduleBodyCheck(at: current, context: context)
                return
            }
            logger.notice(
                "connection closed: its request body was not complete in time",
                metadata: ["timeout": "\(deadlines.body)", "minimum_bytes_per_second": "\(deadlines.bodyMinimumBytesPerSecond)"]
            )
            context.close(promise: nil)
        }
    }

    func requestEnded() {
        inRequest = false
        stop()
    }

    func stop() {
        timer?.cancel()
        timer = nil
        bodyDeadline = nil
    }
}

/// Before the HTTP decoder: starts the request head's timer at its first byte.
final class RequestBytesWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    let deadline: RequestDeadline

    init(deadline: RequestDeadline) { self.deadline = deadline }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        deadline.bytesArrived(context: context)
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline.stop()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { deadline.stop() }
}

/// After the HTTP decoder: the head decoded switches to the body's deadline, whose body bytes extend it; the request's
/// end makes the next bytes a head.
final class RequestHeadWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    let deadline: RequestDeadline

    init(deadline: RequestDeadline) { self.deadline = deadline }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: deadline.headComplete(context: context)
        case .body(let bytes): deadline.bodyArrived(bytes.readableBytes)
        case .end: deadline.requestEnded()
        }
        context.fireChannelRead(data)
    }
}
