import LedgerCore

/// A stream id from a literal the test knows is valid.
func stream(_ name: String) -> StreamID { StreamID(name)! }
