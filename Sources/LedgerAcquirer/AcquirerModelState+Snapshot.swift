import struct Foundation.Data
import class Foundation.JSONDecoder
import class Foundation.JSONEncoder

/// The model state as a snapshot: canonical bytes (equal states → equal bytes), written and read a
/// record at a time so that neither side ever holds the whole state as one JSON tree.
///
/// Format (version 2), lines separated by `\n` (JSON escapes every newline inside a value):
/// - `{"acquirerState":2}`;
/// - the state without its holds, declined authorizations and modifications, as JSON with sorted keys;
/// - one line per hold, then per declined authorization, then per modification, each in key order:
///   a section letter (`h`, `d`, `m`) and `{"k":key,"v":value}` with sorted keys.
///
/// A version-1 snapshot (the whole state as one JSON document) is still read.
extension AcquirerModelState {
    /// The whole snapshot in one piece (tests, and the in-process model's persistence).
    public func snapshot() throws -> Data {
        var encoder = SnapshotEncoder(self)
        var data = Data()
        while let part = try encoder.next(maximumBytes: 1 << 20) { data.append(part) }
        return data
    }

    public init(snapshot: Data) throws {
        var decoder = SnapshotDecoder()
        try decoder.feed(snapshot)
        self = try decoder.finish()
    }
}

/// Writes a state's snapshot in parts (``next(maximumBytes:)``), a record at a time.
public struct SnapshotEncoder {
    private let state: AcquirerModelState
    private let holdKeys: [String]
    private let declinedKeys: [String]
    private let modificationKeys: [String]
    private var section = 0
    private var index = 0
    private let encoder: JSONEncoder

    static let marker = Data("{\"acquirerState\":2}\n".utf8)

    public init(_ state: AcquirerModelState) {
        self.state = state
        holdKeys = state.holds.keys.sorted()
        declinedKeys = state.declined.keys.sorted()
        modificationKeys = state.modifications.keys.sorted()
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
    }

    /// The next part: whole records, at least one, until the part reaches `maximumBytes`; nil at the end.
    public mutating func next(maximumBytes: Int) throws -> Data? {
        var part = Data()
        while part.count < maximumBytes, let record = try nextRecord() { part.append(record) }
        return part.isEmpty ? nil : part
    }

    private mutating func nextRecord() throws -> Data? {
        while true {
            switch section {
            case 0:
                section = 1
                var skeleton = state
                skeleton.holds = [:]
                skeleton.declined = [:]
                skeleton.modifications = [:]
                return Self.marker + (try encoder.encode(skeleton)) + Data([0x0A])
            case 1:
                if index < holdKeys.count, let hold = state.holds[holdKeys[index]] {
                    defer { index += 1 }
                    return try record("h", holdKeys[index], hold)
                }
            case 2:
                if index < declinedKeys.count, let declined = state.declined[declinedKeys[index]] {
                    defer { index += 1 }
                    return try record("d", declinedKeys[index], declined)
                }
            case 3:
                if index < modificationKeys.count, let modification = state.modifications[modificationKeys[index]] {
                    defer { index += 1 }
                    return try record("m", modificationKeys[index], modification)
                }
            default:
                return nil
            }
            section += 1
            index = 0
        }
    }

    private func record<Value: Codable>(_ letter: String, _ key: String, _ value: Value) throws -> Data {
        Data(letter.utf8) + (try encoder.encode(SnapshotRecord(k: key, v: value))) + Data([0x0A])
    }
}

/// Reads a snapshot fed in parts of any size (``feed(_:)``, then ``finish()``).
public struct SnapshotDecoder {
    private var state: AcquirerModelState?
    private var pending = Data()
    private var version1 = false
    private var lineNumber = 0
    private let decoder = JSONDecoder()

    public init() {}

    public mutating func feed(_ data: Data) throws {
        pending.append(data)
        if version1 { return }
        var start = pending.startIndex
        while let end = pending[start...].firstIndex(of: 0x0A) {
            try take(pending[start..<end])
            if version1 { return }
            start = end + 1
        }
        pending = Data(pending[start...])
    }

    public mutating func finish() throws -> AcquirerModelState {
        var state: AcquirerModelState
        if version1 || (lineNumber == 0 && !pending.isEmpty) {
            state = try decoder.decode(AcquirerModelState.self, from: pending)
        } else {
            guard pending.isEmpty, let read = self.state else { throw AcquirerSnapshotError("the snapshot ends inside a record") }
            state = read
        }
        // A snapshot holds the open holds' order, not their expiries: the queue is built from the holds, once read.
        let holds = state.holds
        state.openHolds.rebuildQueue { holds[$0]?.expiresAt }
        return state
    }

    private mutating func take(_ line: Data) throws {
        defer { lineNumber += 1 }
        switch lineNumber {
        case 0:
            guard line + Data([0x0A]) == SnapshotEncoder.marker else {
                version1 = true  // the whole state as one JSON document
                return
            }
        case 1:
            state = try decoder.decode(AcquirerModelState.self, from: line)
        default:
            guard let letter = line.first, state != nil else { throw AcquirerSnapshotError("a snapshot record before the state") }
            let body = line.dropFirst()
            switch letter {
            case UInt8(ascii: "h"):
                let record = try decoder.decode(SnapshotRecord<Hold>.self, from: body)
                state?.holds[record.k] = record.v
            case UInt8(ascii: "d"):
                let record = try decoder.decode(SnapshotRecord<StoredAuthorization>.self, from: body)
                state?.declined[record.k] = record.v
            case UInt8(ascii: "m"):
                let record = try decoder.decode(SnapshotRecord<StoredModification>.self, from: body)
                state?.modifications[record.k] = record.v
            default:
                throw AcquirerSnapshotError("an unknown snapshot record at line \(lineNumber + 1)")
            }
        }
    }
}

struct SnapshotRecord<Value: Codable>: Codable {
    var k: String
    var v: Value
}

public struct AcquirerSnapshotError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
