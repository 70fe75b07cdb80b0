import Foundation
import LedgerAcquirer
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

    /// Resumes the model from `url` when the file exists, else starts a fresh one.
    public static func open(at url: URL, interval: Duration, logger: Logger, fresh: () -> AcquirerModel,
                            clock: @escaping @Sendable () -> Date) throws -> AcquirerModelStore {
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
        let writer = SnapshotWriter(model: model, url: url, logger: logger)
        await writer.save()
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                await writer.save()
            }
        }
        await writer.save()  // at shutdown, after the HTTP server drained
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

    func save() async {
        do {
            let data = try await model.snapshot()
            guard data != last else { return }
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: url, options: .atomic)
            last = data
        } catch {
            logger.error("acquirer model snapshot failed", metadata: ["error": "\(error)"])
        }
    }
}
