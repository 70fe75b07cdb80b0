import LedgerMacros

/// A page of rows from a read model (the orders list, or the authorizations list), as stored JSON.
///
/// The filters and pages of the read-model lists are plain values in LedgerCore, beside ``EventFilter``:
/// the HTTP routes (which never see PostgreSQL) and the read-model stores in LedgerPostgres both speak them.
@MemberwiseInit
public struct OrderPage: Sendable {
    public let ordersJSON: [String]
    public let nextCursor: Int64?
}
