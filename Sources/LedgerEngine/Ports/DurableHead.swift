/// The log's durable head, as the writer needs it: nothing is answered before it is durable (issue 30, item 4). The
/// daemon's is LedgerPostgres' `HeadWatcher` (the synchronous standby's confirmation); a tool, a benchmark or a
/// simulation keeps none.
package protocol DurableHead: Sendable {
    /// A batch committed through `position`, its commit having waited for the durability the log promises.
    func confirm(_ position: Int64)
    /// Waits until everything committed so far is durable; the position it covers.
    @discardableResult func barrier() async throws -> Int64
}
