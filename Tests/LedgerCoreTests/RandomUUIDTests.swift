import Foundation
import Testing

@testable import LedgerCore

/// The ledger's identifiers (`UUID.newRandom()`): version 4, variant 10, written lowercase as Foundation writes them, and the
/// only way the daemon mints one.
struct RandomUUIDTests {
    @Test func everyIdentifierIsAVersion4Variant10UUID() {
        for _ in 0..<10_000 {
            let id = UUID.newRandom()
            #expect(id.uuid.6 >> 4 == 4)
            #expect(id.uuid.8 >> 6 == 0b10)
            // Foundation parses it back to the same value (the text is a well-formed UUID).
            #expect(UUID(uuidString: id.uuidString) == id)
        }
    }

    @Test func theLowercaseTextIsFoundationsTextLowercased() {
        for _ in 0..<10_000 {
            let id = UUID.newRandom()
            #expect(id.lowercasedString == id.uuidString.lowercased())
        }
        let known = UUID(uuidString: "0A1B2C3D-4E5F-4061-8293-A4B5C6D7E8F9")!
        #expect(known.lowercasedString == "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9")
        #expect(UUID.newRandomString().count == 36)
    }

    @Test func identifiersDoNotRepeatAndEveryRandomBitVaries() {
        var seen = Set<UUID>()
        var ones = [Int](repeating: 0, count: 128)
        let count = 100_000
        for _ in 0..<count {
            let id = UUID.newRandom()
            seen.insert(id)
            withUnsafeBytes(of: id.uuid) { bytes in
                for bit in 0..<128 where bytes[bit / 8] & (0x80 >> (bit % 8)) != 0 { ones[bit] += 1 }
            }
        }
        #expect(seen.count == count)
        // The 122 random bits are each set about half the time (±5 %: 100,000 draws make ±0.5 % about 3 σ); the six
        // version and variant bits are fixed.
        let fixed: [Int: Bool] = [48: false, 49: true, 50: false, 51: false, 64: true, 65: false]
        for bit in 0..<128 {
            if let set = fixed[bit] {
                #expect(ones[bit] == (set ? count : 0), "bit \(bit)")
            } else {
                #expect(abs(ones[bit] - count / 2) < count / 20, "bit \(bit): \(ones[bit]) of \(count)")
            }
        }
    }

    /// Foundation's `UUID()` opens, reads and closes /dev/urandom per call on Linux (three system calls, ~10 % of the
    /// daemon's CPU per payment when it minted every id): no source file of the daemon calls it.
    @Test func noSourceFileMintsAFoundationUUID() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(files.count > 100)
        var offenders: [String] = []
        for file in files {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (number, line) in lines.enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                if code.contains("UUID()") { offenders.append("\(file.lastPathComponent):\(number + 1)") }
            }
        }
        #expect(offenders.isEmpty, "UUID() in \(offenders); use UUID.newRandom()")
    }
}

/// The time-ordered ids (`UUID.newTimeOrdered`) the ledger's indexes key: version 7, variant 10, their first 48 bits
/// the Unix time in milliseconds, so an id minted later sorts after — as bytes and as the lowercase text PostgreSQL
/// and the read models compare — and the rest random.
struct TimeOrderedUUIDTests {
    @Test func idsMintedLaterSortAfterAndCarryTheirMillisecond() {
        let start = Date(timeIntervalSince1970: 1_800_000_000.123)
        var previous: String?
        // Two milliseconds apart: a Date is a binary fraction of a second, and a millisecond boundary can fall either side.
        for step in 0..<2_000 {
            let now = start.addingTimeInterval(Double(step) * 0.002)
            let id = UUID.newTimeOrdered(now: now)
            #expect(id.uuid.6 >> 4 == 7)
            #expect(id.uuid.8 >> 6 == 0b10)
            let text = id.lowercasedString
            #expect(UUID(uuidString: text) == id)
            // The first 12 hex digits are the millisecond.
            #expect(UInt64(text.prefix(8) + text.dropFirst(9).prefix(4), radix: 16) == UInt64((now.timeIntervalSince1970 * 1000).rounded(.down)))
            if let previous { #expect(previous < text, "\(previous) then \(text)") }
            previous = text
        }
    }

    @Test func idsOfOneMillisecondDoNotRepeat() {
        let now = Date()
        let ids = Set((0..<50_000).map { _ in UUID.newTimeOrdered(now: now) })
        #expect(ids.count == 50_000)
    }

    /// The ids the payment path mints are time-ordered: its event ids (a new event's default) and the order id.
    @Test func aNewEventsIdIsTimeOrdered() {
        let event = NewEvent(type: "SampleRecorded", data: "{}", effectiveAt: Date())
        #expect(event.eventID.uuid.6 >> 4 == 7)
    }
}
