import LedgerHTTPServer
import Testing

/// Security review 3, N13: one log line per refused connection and per 503 (5.8 MB for a 30 s outage). The throttle
/// logs the first of a burst at once and then one line per interval carrying how many it left out.
@Suite struct LogThrottleTests {
    @Test func aBurstIsOneLineAndTheNextLineCarriesTheCountLeftOut() {
        var window = LogThrottle.Window(interval: .seconds(10))
        let start = ContinuousClock.now
        // 40,744 occurrences within one interval: the first is logged, the rest counted.
        #expect(window.occurred(at: start) == 0)
        var logged = 0
        for step in 1..<40_744 where window.occurred(at: start + .microseconds(step * 100)) != nil { logged += 1 }
        #expect(logged == 0)
        // The first after the interval is logged with the count left out; the count starts again.
        #expect(window.occurred(at: start + .seconds(10)) == 40_743)
        #expect(window.occurred(at: start + .seconds(11)) == nil)
        #expect(window.occurred(at: start + .seconds(30)) == 1)
        #expect(window.occurred(at: start + .seconds(45)) == 0)
    }
}
