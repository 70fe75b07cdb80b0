import LedgerCore
import LedgerHTTP
import Testing

/// The console's form reading and its money display, without a database.
@Suite struct ConsoleFormTests {
    @Test func readsURLEncodedFieldsAndRefusesAFieldGivenTwice() throws {
        let form = try ConsoleForm.parse("amount=12.50&reason=a+dent%2C+left&empty=&flag")
        #expect(form["amount"] == "12.50" && form["reason"] == "a dent, left" && form["empty"] == "" && form["flag"] == "")
        #expect(form["missing"] == nil)
        #expect(try ConsoleForm.parse("").fields.isEmpty)
        let twice = #expect(throws: APIError.self) { try ConsoleForm.parse("amount=1&amount=2") }
        #expect(twice?.code == "invalid_form" && twice?.field == "amount" && twice?.status == .badRequest)
        let malformed = #expect(throws: APIError.self) { try ConsoleForm.parse("amount=%ZZ") }
        #expect(malformed?.code == "invalid_form")
    }

    @Test func minorUnitsAreShownAsTheCurrencysDecimals() {
        let usd = Currency(code: "USD")!
        #expect(ConsoleChart.decimal(5900, usd) == "59.00")
        #expect(ConsoleChart.decimal(5, usd) == "0.05")
        #expect(ConsoleChart.decimal(-1234, usd) == "-12.34")
        #expect(ConsoleChart.decimal(Int64.min, usd) == "-92233720368547758.08")
        if let yen = Currency(code: "JPY") { #expect(ConsoleChart.decimal(1500, yen) == "1500") }
    }
}

/// The console's paging of lists a service reads whole.
@Suite struct ConsolePagingTests {
    @Test func aListIsShownAPageAtATimeAndABadPageIsTheFirstOrTheLast() {
        let items = Array(1...250)
        var shown = ConsolePages.page(items, page: nil, size: 100)
        #expect(Array(shown.items) == Array(1...100) && shown.page == 1 && shown.next == 2)
        shown = ConsolePages.page(items, page: "3", size: 100)
        #expect(Array(shown.items) == Array(201...250) && shown.page == 3 && shown.next == nil)
        #expect(ConsolePages.page(items, page: "99", size: 100).page == 3)
        #expect(ConsolePages.page(items, page: "-4", size: 100).page == 1 && ConsolePages.page(items, page: "x", size: 100).page == 1)
        let empty = ConsolePages.page([Int](), page: "2", size: 100)
        #expect(empty.items.isEmpty && empty.page == 1 && empty.next == nil)
    }
}
