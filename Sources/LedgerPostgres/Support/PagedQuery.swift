/// Pages of one streamed query, handed out on demand: the query runs once (a cursor, in effect),
/// a producer task cuts its rows into pages, and each page waits until the previous one was taken —
/// so a consumer that pulls pages (the acquirer reading a batch's items) holds one page at a time
/// and the database stream is paused in between. No `OFFSET`, no keyset re-planning per page.
package final class PagedQuery<Page: Sendable>: Sendable {
    private let channel = PageChannel<Page>()
    private let producer: Task<Void, Never>

    /// `produce` runs the query and calls `emit` with each page in order; `emit` returns when the
    /// page was taken (or throws `CancellationError` once the consumer went away).
    package init(_ produce: @escaping @Sendable (_ emit: @Sendable (Page) async throws -> Void) async throws -> Void) {
        let channel = self.channel
        producer = Task {
            do {
                try await produce { page in try await channel.put(page) }
                await channel.finish(nil)
            } catch {
                await channel.finish(error)
            }
        }
    }

    /// The next page, nil after the last; rethrows the query's failure.
    package func next() async throws -> Page? { try await channel.take() }

    /// Stops the query (a consumer that will not take more pages).
    package func cancel() {
        producer.cancel()
        let channel = self.channel
        Task { await channel.close() }
    }
}

/// A one-page hand-over between a producer and a consumer.
private actor PageChannel<Page: Sendable> {
    private var buffered: Page?
    private var taker: CheckedContinuation<Page?, any Error>?
    private var putter: CheckedContinuation<Void, any Error>?
    private var finished = false
    private var failure: (any Error)?
    private var closed = false

    func put(_ page: Page) async throws {
        if closed { throw CancellationError() }
        if let taker {
            self.taker = nil
            taker.resume(returning: page)
            return
        }
        buffered = page
        try await withCheckedThrowingContinuation { putter = $0 }
    }

    func take() async throws -> Page? {
        if let page = buffered {
            buffered = nil
            putter?.resume()
            putter = nil
            return page
        }
        if finished {
            if let failure { throw failure }
            return nil
        }
        return try await withCheckedThrowingContinuation { taker = $0 }
    }

    func finish(_ error: (any Error)?) {
        finished = true
        failure = error
        if let taker {
            self.taker = nil
            if let error { taker.resume(throwing: error) } else { taker.resume(returning: nil) }
        }
    }

    func close() {
        closed = true
        buffered = nil
        putter?.resume(throwing: CancellationError())
        putter = nil
    }
}
