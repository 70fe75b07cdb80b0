import Foundation
import LedgerAcquirer
import LedgerCore
import LedgerServices
import Logging
import ServiceLifecycle

/// Keeps the daemon's acquirer model across restarts. The model stands for an external acquirer,
/// whose memory outlives ours: without this, holds authorized before a restart would be unknown to
/// it afterwards (captures refused, settlement of earlier captures impossible).
///
/// The model's canonical snapshot is written to `<data dir>/acquirer-model.json` every `interval`
/// when it changed, and at graceful shutdown; a new file replaces the old one atomically. On start
/// the daemon resumes from it. A crash (`kill -9`) loses at most the last `interval` of the model's
/// changes; the ledger side loses nothing (and recovery resolves what the model forgot).
public struct AcquirerModelStore: Service {
    public let model: AcquirerModel
    let url: URL
    let interval: Duration
    let logger: Logger
    private let writer: SnapshotWriter

    init(model: AcquirerModel, url: URL, interval: Duration, logger: Logger) {
        self.model = model
        self.url = url
        self.interval = interval
        self.logger = logger
        self.writer = SnapshotWriter(model: model, url: url, logger: logger)
    }

    /// Writes the snapshot now (when it changed): whatever the model answered so far is durable.
    func persist() async throws { try await writer.save() }

    /// Resumes the model from `url` when the file exists, else starts a fresh one.
    public static func open(
        at url: URL,
        interval: Duration,
        logger: Logger,
        fresh: () -> AcquirerModel,
        clock: @escaping @Sendable () -> Date
    ) throws -> AcquirerModelStore {
        let model: AcquirerModel
        if let data = FileManager.default.contents(atPath: url.path) {
            model = try AcquirerModel(snapshot: data, clock: clock)
            logger.info("acquirer model resumed", metadata: ["file": "\(url.path)", "bytes": "\(data.count)"])
        } else {
            model = fresh()
        }
        return AcquirerModelStore(model: model, url: url, interval: interval, logger: logger)
    }

    public func run() async throws {
        await saveLogging()
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                await saveLogging()
            }
        }
        await saveLogging()  // at shutdown, after the HTTP server drained
    }

    private func saveLogging() async {
        do { try await writer.save() } catch {
            logger.error("acquirer model snapshot failed", metadata: ["error": "\(error)"])
        }
    }
}

/// The daemon's acquirer: its model, with settlement answers made durable before they are returned.
/// A real acquirer keeps what it accepted; so does the model once its snapshot is on disk, so a
/// `kill -9` right after the acquirer accepted a batch cannot make it forget the batch while the
/// ledger goes on to record it. (Card operations are saved every `LEDGERD_ACQUIRER_SNAPSHOT_SECONDS`;
/// see the type above.)
struct DurableAcquirer: AcquirerModelWrapper {
    let store: AcquirerModelStore
    var model: AcquirerModel { store.model }

    func submitBatch(
        _ header: SettlementBatchHeader,
        pages: @escaping @Sendable (Int) async throws -> [SettlementItem]?
    ) async throws(AcquirerError) -> SettlementReceipt {
        let receipt = try await model.submitBatch(header, pages: pages)
        do { try await store.persist() } catch {
            throw AcquirerError(.unavailable, "the acquirer model could not save its state: \(error)")
        }
        return receipt
    }
}

/// Writes the model's snapshot when it differs from the last one written.
private actor SnapshotWriter {
    let model: AcquirerModel
    let url: URL
    let logger: Logger
    private var last: Data?

    init(model: AcquirerModel, url: URL, logger: Logger) {
        self.model = model
        self.url = url
        self.logger = logger
        self.last = FileManager.default.contents(atPath: url.path)
    }

    func save() async throws {
        let data = try await model.snapshot()
        guard data != last else { return }
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url, options: .atomic)
        last = data
    }
}
