import ArgumentParser
import Foundation
import LedgerAPI
import LedgerApp

/// `ledgerd keys add|list|revoke`: the back-office API keys in the keyring file (`LEDGERD_API_KEYRING`,
/// embedded default `<data dir>/api-keyring.json`). The file holds verifiers only; `add` prints the new
/// key once. A running daemon rereads the file within a second. Rotation: add a key, move the clients
/// to it, revoke the old one.
struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Back-office API keys: add, list, revoke (the keyring file; no restart needed).",
        subcommands: [Add.self, List.self, Revoke.self]
    )

    static func keyringURL(_ common: CommonOptions) throws -> URL {
        let configuration = try common.configuration()
        guard let url = APIKeys.keyringURL(for: configuration) else {
            throw ValidationError("no keyring file: set LEDGERD_API_KEYRING (with a database URL there is no default)")
        }
        return url
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a key and print it (only its salted hash is stored).")
        @OptionGroup var common: CommonOptions
        @Option(help: "operator (reads and changes) or auditor (reads only).") var role: String
        @Option(help: "The key's id (1–32 of a-z, A-Z, 0-9, -); default op-<n> / au-<n>.") var id: String?
        @Option(help: "Refuse the key after this many days.") var expiresInDays: Int?

        func run() async throws {
            guard let role = Principal.Role(rawValue: role) else { throw ValidationError("--role is operator or auditor") }
            if let expiresInDays, expiresInDays < 1 { throw ValidationError("--expires-in-days must be at least 1") }
            let now = Date()
            let token = try APIKeys.add(
                role: role,
                id: id,
                expiresAt: expiresInDays.map { now.addingTimeInterval(Double($0) * 86_400) },
                keyring: try Keys.keyringURL(common),
                now: now
            )
            print(token.text)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the keys' ids, roles and lives (never a secret).")
        @OptionGroup var common: CommonOptions

        func run() async throws {
            let file = try APIKeys.readKeyring(try Keys.keyringURL(common))
            let now = Date()
            let format = ISO8601DateFormatter()
            let header = ["ID", "ROLE", "STATE", "CREATED", "EXPIRES"]
            let rows = file.keys.map { key in
                [
                    key.id, key.role.rawValue,
                    key.revokedAt != nil ? "revoked" : key.isLive(at: now) ? "live" : "expired",
                    format.string(from: key.createdAt), key.expiresAt.map(format.string(from:)) ?? "-",
                ]
            }
            let widths = header.indices.map { i in ([header] + rows).map { $0[i].count }.max() ?? 0 }
            for fields in [header] + rows {
                print(fields.enumerated().map { i, f in f.padding(toLength: widths[i], withPad: " ", startingAt: 0) }.joined(separator: "  "))
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Refuse a key from now on.")
        @OptionGroup var common: CommonOptions
        @Argument(help: "The key's id.") var id: String

        func run() async throws {
            try APIKeys.revoke(id: id, keyring: try Keys.keyringURL(common))
            print("revoked \(id)")
        }
    }
}
