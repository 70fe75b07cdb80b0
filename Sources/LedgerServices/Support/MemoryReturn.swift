import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Gives freed memory back to the operating system: glibc's allocator keeps freed pages in its arenas, so a process's
/// resident set only ever grows to its peak (review 3, N15: a daemon that once served six journal exports at once
/// stayed there for good) and, under a steady load, with the fragmentation of its arenas (issue 57: at minute 20 of a
/// day at the machine's maximum the daemon's arenas held 550 MB for 285 MB in use).
///
/// The three callers: when the last expensive request (LedgerHTTP's `ExpensiveRequestLimitMiddleware`) or event stream
/// ends, ``soon(after:)`` schedules one `malloc_trim(0)` two seconds later (after the reply's bytes are written and
/// freed; calls in between are folded into it); ``MemoryTrimmer`` trims every `LEDGERD_MEMORY_TRIM_SECONDS`; the
/// acquirer service trims after it stores finished payments. A trim walks the free lists once — milliseconds.
public enum MemoryReturn {
    private static let scheduled = Atomic<Bool>(false)
    private static let trims = Atomic<Int>(0)

    /// How many trims ran (for tests).
    public static var trimCount: Int { trims.load(ordering: .relaxed) }

    /// Schedules a trim in `delay` unless one is pending.
    public static func soon(after delay: Duration = .seconds(2)) {
        guard scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        Task.detached(priority: .background) {
            try? await Task.sleep(for: delay)
            scheduled.store(false, ordering: .releasing)
            trimNow()
        }
    }

    /// Returns free memory at once.
    public static func trimNow() {
        _ = mallocTrim?(0)
        trims.add(1, ordering: .relaxed)
    }

    /// glibc's `malloc_trim`, looked up once (Swift's Glibc module does not declare it); nil on another C library.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(nil, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()
}
