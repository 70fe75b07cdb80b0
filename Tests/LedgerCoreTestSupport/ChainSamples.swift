import Foundation
import LedgerCore
import LedgerEngine

/// Appends whose every byte is fixed (ids, times, texts): committed on PostgreSQL and on the in-memory log at the
/// same clock, they must end on the same chain head (InMemoryChainTests), and in memory they must chain
/// (InMemoryEventLogTests).
package enum ChainSamples {
    package static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// The n-th fixed id.
    package static func id(_ n: Int) -> UUID {
        UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", n))!
    }

    /// `count` appends over three streams, each of one or two events, every third with an idempotency key, texts with
    /// characters beyond ASCII (the chain hashes the stored text byte for byte).
    package static func requests(count: Int = 12) -> [AppendRequest] {
        var versions: [String: Int64] = [:]
        var requests: [AppendRequest] = []
        var n = 0
        for i in 0..<count {
            let name = "sample-\(i % 3)"
            let events = (0..<(1 + i % 2)).map { _ -> NewEvent in
                n += 1
                return NewEvent(
                    eventID: id(n),
                    type: "SampleRecorded",
                    data: #"{"n": \#(n), "note": "événement ✓"}"#,
                    effectiveAt: start.addingTimeInterval(Double(n) / 1000)
                )
            }
            let version = versions[name] ?? 0
            var request = AppendRequest(
                stream: StreamID(name)!,
                expectedVersion: version == 0 ? .noStream : .exact(version),
                events: events,
                metadata: EventMetadata(actor: "chain-sample-\(i)")
            )
            if i % 3 == 0 { request.idempotency = IdempotencyKey(key: "sample-key-\(i)", for: request) }
            versions[name] = version + Int64(events.count)
            requests.append(request)
        }
        return requests
    }
}
