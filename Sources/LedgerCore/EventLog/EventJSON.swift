import Foundation

/// Renders recorded events as JSON for the history endpoints. `data` and `metadata` are inserted
/// as the stored JSON texts (already valid JSON), never decoded and re-encoded, so what
/// an auditor reads is byte for byte what the hash covers.
public enum EventJSON {
    public static func render(_ event: RecordedEvent) -> String {
        var out = "{"
        out += "\"position\":\(event.position),"
        out += "\"stream\":\(quote(event.streamID.rawValue)),"
        out += "\"version\":\(event.streamVersion),"
        out += "\"event_id\":\(quote(event.eventID.uuidString.lowercased())),"
        out += "\"type\":\(quote(event.type)),"
        out += "\"schema_version\":\(event.schemaVersion),"
        out += "\"data\":\(event.data),"
        out += "\"metadata\":\(event.metadata),"
        out += "\"effective_at\":\(quote(timestamp(event.effectiveAtMicros))),"
        out += "\"recorded_at\":\(quote(timestamp(event.recordedAtMicros))),"
        out += "\"prev_hash\":\(quote(hex(event.prevHash))),"
        out += "\"hash\":\(quote(hex(event.hash)))"
        return out + "}"
    }

    public static func render(_ events: [RecordedEvent]) -> String {
        "[" + events.map(render).joined(separator: ",") + "]"
    }

    /// A JSON string literal.
    public static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// RFC 3339 UTC with microseconds, from exact integer microseconds (no floating point).
    public static func timestamp(_ micros: Int64) -> String { RFC3339.format(micros) }

    public static func hex(_ bytes: [UInt8]) -> String { Hex.encode(bytes) }
}
