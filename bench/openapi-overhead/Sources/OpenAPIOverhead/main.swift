import Foundation
import Hummingbird

// openapi-overhead plain|generated|generated-buffered PORT: serves listDisputes and captureOrder on 127.0.0.1:PORT (see Package.swift).
let arguments = CommandLine.arguments
guard arguments.count == 3, ["plain", "generated", "generated-buffered"].contains(arguments[1]), let port = Int(arguments[2]) else {
    print("usage: openapi-overhead plain|generated|generated-buffered PORT")
    exit(2)
}
let ledger = Ledger()
let router = Router()
if arguments[1] == "plain" {
    PlainRoutes.register(ledger, on: router)
} else if arguments[1] == "generated" {
    try GeneratedAPI.register(ledger, on: router)
} else {
    try GeneratedAPI.registerBuffered(ledger, on: router)
}
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil)
)
try await app.runService()
