/// A page of the log read for a consumer that follows it: the events after a position that pass a
/// filter, and `through`, the position up to which the page is complete. Everything in
/// (after, through] that passes the filter is in `events`; the next page starts after `through`.
///
/// `through` is the last event's position when the page is full, else the head the reader saw
/// before it read the events (so a filtered consumer moves past events it does not want).
public struct FeedPage: Sendable, Hashable {
    public var events: [RecordedEvent]
    public var through: Int64

    public init(events: [RecordedEvent], through: Int64) {
        self.events = events
        self.through = through
    }
}

/// Server-Sent Events framing (https://html.spec.whatwg.org/multipage/server-sent-events.html):
/// one event per frame, `id:` the position, so that a reconnecting client's `Last-Event-ID` is
/// where it resumes.
public enum ServerSentEvents {
    /// `id: <position>`, `event: <type>`, `data: <the event's JSON>`, a blank line.
    public static func frame(_ event: RecordedEvent) -> String {
        // The event's JSON has no raw line breaks (jsonb text and EventJSON escape them), so one data line carries it.
        "id: \(event.position)\nevent: \(event.type)\ndata: \(EventJSON.render(event))\n\n"
    }

    /// A comment line: keeps an idle connection open through proxies; clients ignore it.
    public static let keepAlive = ": keep-alive\n\n"

    /// The position a `Last-Event-ID` header names (a non-negative integer), or nil.
    public static func position(lastEventID: String) -> Int64? {
        let text = lastEventID.filter { $0 != " " && $0 != "\t" }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }
}

extension ServerSentEvents {
    /// One received event: its `id`, `event` and `data` fields.
    public struct Message: Sendable, Hashable {
        public var id: String?
        public var event: String?
        public var data: String
    }

    /// Reads a Server-Sent Events stream chunk by chunk (lines end with LF or CRLF; a blank line ends a
    /// message; comment lines, starting with `:`, are skipped). For `ledgerd tail` and the tests.
    public struct Parser: Sendable {
        private var pending: [UInt8] = []
        private var id: String?
        private var event: String?
        private var data: [String] = []

        public init() {}

        /// The messages completed by `bytes`.
        public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Message] {
            pending.append(contentsOf: bytes)
            var messages: [Message] = []
            var start = 0
            while let newline = pending[start...].firstIndex(of: 0x0A) {
                var end = newline
                if end > start && pending[end - 1] == 0x0D { end -= 1 }
                let line = String(decoding: pending[start..<end], as: UTF8.self)
                start = newline + 1
                if line.isEmpty {
                    if !data.isEmpty || id != nil { messages.append(Message(id: id, event: event, data: data.joined(separator: "\n"))) }
                    (id, event, data) = (nil, nil, [])
                    continue
                }
                if line.hasPrefix(":") { continue }
                let field: Substring
                var value: Substring
                if let colon = line.firstIndex(of: ":") {
                    field = line[..<colon]
                    value = line[line.index(after: colon)...]
                    if value.hasPrefix(" ") { value = value.dropFirst() }
                } else {
                    field = line[...]
                    value = ""
                }
                switch field {
                case "id": id = String(value)
                case "event": event = String(value)
                case "data": data.append(String(value))
                default: break
                }
            }
            pending.removeFirst(start)
            return messages
        }
    }
}
