import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// The time and connection bounds of an HTTP/1.1 server, shared by the ledger (`ledgerd serve`) and the acquirer
/// service (`ledgerd acquirer serve`), so that both refuse the same slow and greedy clients in the same way.
///
/// - `idleTimeout`: a connection that sends nothing this long is closed (Hummingbird's idle handler).
/// - `headerTimeout`: a request head not complete this long after its first byte closes the connection.
/// - `bodyTimeout`, `bodyMinimumBytesPerSecond`: Apache `mod_reqtimeout`'s `body=20,MinRate=500`. A body must end
///   within `bodyTimeout` of its head, and each `bodyMinimumBytesPerSecond` bytes received extend that by one second:
///   an upload at any honest speed finishes, a body trickled a byte now and then is closed after `bodyTimeout`.
/// - `maximumConnections`, `maximumConnectionsPerClient`: a connection beyond either (all addresses, or its own
///   address) is closed at once, so that one address cannot take every slot.
public struct HTTPConnectionPolicy: Sendable {
    public var idleTimeout: Duration
    public var headerTimeout: Duration
    public var bodyTimeout: Duration
    public var bodyMinimumBytesPerSecond: Int
    public var maximumConnections: Int
    public var maximumConnectionsPerClient: Int

    public init(
        idleTimeout: Duration = .seconds(30),
        headerTimeout: Duration = .seconds(10),
        bodyTimeout: Duration = .seconds(20),
        bodyMinimumBytesPerSecond: Int = 500,
        maximumConnections: Int = 1024,
        maximumConnectionsPerClient: Int = 128
    ) {
        precondition(bodyMinimumBytesPerSecond >= 1 && maximumConnections >= 1 && maximumConnectionsPerClient >= 1)
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.bodyMinimumBytesPerSecond = bodyMinimumBytesPerSecond
        self.maximumConnections = maximumConnections
        self.maximumConnectionsPerClient = maximumConnectionsPerClient
    }

    /// Hummingbird's HTTP/1 configuration with these bounds: one ``ConnectionLimit`` for the server, and per
    /// connection its ``ConnectionLimitHandler`` and ``RequestDeadlineHandler``.
    public func http1Configuration(logger: Logger) -> HTTP1Channel.Configuration {
        let limit = ConnectionLimit(maximum: maximumConnections, perClient: maximumConnectionsPerClient, logger: logger)
        let deadlines = RequestDeadlines(
            head: TimeAmount(headerTimeout),
            body: TimeAmount(bodyTimeout),
            bodyMinimumBytesPerSecond: bodyMinimumBytesPerSecond
        )
        var http = HTTP1Channel.Configuration(additionalChannelHandlers: [], idleTimeout: TimeAmount(idleTimeout))
        http.additionalChannelHandlers = { [ConnectionLimitHandler(limit: limit), RequestDeadlineHandler(deadlines: deadlines, logger: logger)] }
        return http
    }
}

/// How many HTTP connections are open, in all and per client address, shared by every connection's
/// ``ConnectionLimitHandler``.
public final class ConnectionLimit: Sendable {
    /// Why a connection was refused.
    public enum Refusal: String, Sendable { case server, client }

    public let maximum: Int
    public let perClient: Int
    let logger: Logger
    let refusals = LogThrottle()
    private let open = Mutex<(total: Int, byClient: [String: Int])>((0, [:]))

    public init(maximum: Int, perClient: Int, logger: Logger) {
        self.maximum = maximum
        self.perClient = perClient
        self.logger = logger
    }

    /// Counts a new connection from `client` (its address without the port); a refusal when it is one too many, in
    /// all or from that address (it still counts until ``closed(client:)``).
    public func opened(client: String) -> Refusal? {
        open.withLock { open in
            open.total += 1
            let fromClient = open.byClient[client, default: 0] + 1
            open.byClient[client] = fromClient
            if open.total > maximum { return .server }
            return fromClient > perClient ? .client : nil
        }
    }

    public func closed(client: String) {
        open.withLock { open in
            open.total -= 1
            let left = open.byClient[client, default: 1] - 1
            open.byClient[client] = left > 0 ? left : nil
        }
    }
}

/// Counts its connection in a ``ConnectionLimit`` and closes it at once when a limit is exceeded.
final class ConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let limit: ConnectionLimit

    init(limit: ConnectionLimit) { self.limit = limit }

    func handlerAdded(context: ChannelHandlerContext) {
        // The address without the port: one client's connections come from many ports.
        let client = context.channel.remoteAddress?.ipAddress ?? "unknown"
        let refusal = limit.opened(client: client)
        let limit = self.limit
        context.channel.closeFuture.whenComplete { _ in limit.closed(client: client) }
        guard let refusal else { return }
        let metadata: Logger.Metadata =
            refusal == .server ? ["limit": "\(limit.maximum)"] : ["limit_per_client": "\(limit.perClient)", "client": "\(client)"]
        limit.refusals.log(.warning, "connection refused: the HTTP connection limit is reached", metadata: metadata, to: limit.logger)
        context.channel.close(promise: nil)
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
