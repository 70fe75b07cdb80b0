import Foundation
import LedgerCore

/// What each metric of `/metrics` means: the `# HELP` lines (swift-metrics' factory cannot carry help text, so the
/// exposition adds them here), and the process metrics read at each scrape.
enum MetricsHelp {
    /// Every metric the daemon records, with its help text. A test checks that `/metrics` shows none without one.
    static let help: [String: String] = [
        "http_requests_total": "HTTP requests answered, by route pattern, method and status",
        "http_request_duration_seconds": "Time to answer an HTTP request, by route pattern and method",
        "ledger_appended_events_total": "Events appended to the ledger",
        "ledger_append_requests_total": "Append requests by outcome (appended, replayed, version_conflict, idempotency_conflict, redecided, failed)",
        "ledger_batch_events": "Events committed per group-commit transaction",
        "ledger_commit_duration_seconds": "Time to commit one group-commit batch",
        "ledger_append_latency_seconds": "Time from an append's request to its commit",
        "ledger_authentication_failures_total":
            "Failed authentications by kind (api_key, console_sign_in) and source address (the first 1,000 addresses; later ones as other)",
        "applepay_tokens_accepted_total": "Apple Pay tokens verified and decrypted",
        "applepay_token_rejections_total": "Apple Pay tokens refused, by reason",
        "ledger_acquirer_request_seconds": "Time of one call to the acquirer service, retries included, answered or not, by operation",
        "ledger_acquirer_errors_total":
            "Failed attempts of calls to the acquirer service, by operation and kind (timeout, transport, 5xx, mismatch, breaker_open)",
        "ledger_acquirer_breaker_state": "State of the circuit breaker in front of the acquirer service: 0 closed, 1 half-open, 2 open",
        "ledger_database_up": "1 while the ledger database answers the daemon's probe, 0 during an outage",
        "ledger_job_runs_total":
            "Runs of a background job, by name (settlement, expiry, checkpoint, inventory_snapshot, webhook_dispatch, dispute_poll, memory_trim) and outcome (success, failure)",
        "ledger_job_duration_seconds": "Time one run of a background job took",
        "ledger_job_last_success_timestamp_seconds": "When a background job last ran successfully, in seconds since the Unix epoch",
        "ledger_holds_expired_total": "Holds the expiry sweeper expired",
        "ledger_webhook_deliveries_total": "Webhook POSTs by outcome (delivered, failed)",
        "ledger_witness_cosignatures_total": "Checkpoints this witness cosigned",
        "ledger_witness_refusals_total":
            "Checkpoints this witness refused, by reason (malformed, unknown_origin, bad_signature, stale_old_size, split_view, inconsistent)",
        "ledger_cache_entries": "Entries held by a bounded in-memory structure, by cache (aggregate_states, stream_versions, acquirer_references)",
        "ledger_cache_limit": "Most entries a bounded in-memory structure holds (its LEDGERD_*_ENTRIES setting), by cache",
        "ledger_cache_hits_total": "Look-ups a bounded in-memory structure answered, by cache",
        "ledger_cache_misses_total": "Look-ups a bounded in-memory structure could not answer, by cache",
        "ledger_cache_evictions_total": "Entries a bounded in-memory structure evicted to make room, one per new entry past its limit, by cache",
        "process_start_time_seconds": "Start time of the process since the Unix epoch, in seconds",
        "process_cpu_seconds_total": "User and system CPU time spent, in seconds",
        "process_resident_memory_bytes": "Resident memory size, in bytes",
        "process_virtual_memory_bytes": "Virtual memory size, in bytes",
        "process_open_fds": "Open file descriptors",
    ]

    /// `exposition` with a `# HELP` line before each metric's `# TYPE` line.
    static func withHelp(_ exposition: String) -> String {
        var lines: [Substring] = []
        for line in exposition.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE ") {
                let name = line.dropFirst("# TYPE ".count).split(separator: " ").first.map(String.init) ?? ""
                lines.append(Substring("# HELP \(name) \(help[name] ?? "ledgerd metric \(name)")"))
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// The bounded caches' sizes and counts, in the text format (one family per figure, a line per cache).
    static func caches(_ caches: [(name: String, statistics: CacheStatistics)]) -> String {
        guard !caches.isEmpty else { return "" }
        let families: [(String, String, (CacheStatistics) -> Int)] = [
            ("ledger_cache_entries", "gauge", \.entries), ("ledger_cache_limit", "gauge", \.limit),
            ("ledger_cache_hits_total", "counter", \.hits), ("ledger_cache_misses_total", "counter", \.misses),
            ("ledger_cache_evictions_total", "counter", \.evictions),
        ]
        var out: [String] = []
        for (name, type, figure) in families {
            out.append("# HELP \(name) \(help[name] ?? name)")
            out.append("# TYPE \(name) \(type)")
            for cache in caches { out.append("\(name){cache=\"\(cache.name)\"} \(figure(cache.statistics))") }
        }
        return out.joined(separator: "\n") + "\n"
    }

    /// The process metrics (Linux `/proc/self`), and whether the database is up, in the text format.
    static func processAndDatabase(databaseUp: Bool) -> String {
        var out: [String] = []
        func metric(_ name: String, _ type: String, _ value: String) {
            out.append("# HELP \(name) \(help[name] ?? name)")
            out.append("# TYPE \(name) \(type)")
            out.append("\(name) \(value)")
        }
        metric("ledger_database_up", "gauge", databaseUp ? "1" : "0")
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        {
            // Fields after "pid (comm)": state is field 3; utime 14, stime 15, starttime 22, vsize 23, rss 24.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            func field(_ number: Int) -> Double? { fields.count > number - 3 ? Double(fields[number - 3]) : nil }
            if let utime = field(14), let stime = field(15) { metric("process_cpu_seconds_total", "counter", "\((utime + stime) / ticks)") }
            if let uptime = try? String(contentsOfFile: "/proc/uptime", encoding: .utf8),
                let since = Double(uptime.split(separator: " ").first ?? ""), let start = field(22)
            {
                let bootTime = Date().timeIntervalSince1970 - since
                metric("process_start_time_seconds", "gauge", String(format: "%.2f", bootTime + start / ticks))
            }
            if let vsize = field(23) { metric("process_virtual_memory_bytes", "gauge", String(format: "%.0f", vsize)) }
            if let rss = field(24) { metric("process_resident_memory_bytes", "gauge", String(format: "%.0f", rss * pageSize)) }
        }
        if let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            metric("process_open_fds", "gauge", "\(fds.count)")
        }
        return out.joined(separator: "\n") + "\n"
    }
}
