import Crypto
import Foundation

/// Why a note, key or checkpoint was refused. `reason` is meant for people (it ends up in 4xx replies and logs).
public struct NoteError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { reason }
}

/// A C2SP `signed-note` (c2sp.org/signed-note): a UTF-8 text ending in a newline, a blank line, then one line
/// per signature: `— <key name> <base64(4-byte key ID ‖ signature)>` (U+2014 EM DASH, spaces, newline).
public struct SignedNote: Sendable, Hashable {
    /// One signature line.
    public struct Signature: Sendable, Hashable {
        public var name: String
        public var keyID: UInt32
        /// The signature bytes after the key ID.
        public var bytes: [UInt8]

        public init(name: String, keyID: UInt32, bytes: [UInt8]) {
            self.name = name
            self.keyID = keyID
            self.bytes = bytes
        }

        /// The line as the note carries it, newline included.
        public var line: String {
            let payload = withUnsafeBytes(of: keyID.bigEndian) { Array($0) } + bytes
            return "\u{2014} \(name) \(Data(payload).base64EncodedString())\n"
        }

        /// Parses one line (with or without its newline).
        public init(line: Substring) throws(NoteError) {
            let body = line.hasSuffix("\n") ? line.dropLast() : line
            guard body.hasPrefix("\u{2014} ") else { throw NoteError("a signature line starts with an em dash and a space") }
            let fields = body.dropFirst(2).split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 2, SignedNote.isValidKeyName(fields[0]) else {
                throw NoteError("a signature line is \"— <key name> <base64 signature>\"")
            }
            guard let payload = Data(base64Encoded: String(fields[1])), payload.count >= 5 else {
                throw NoteError("a signature is base64 of a 4-byte key ID and the signature")
            }
            let bytes = Array(payload)
            name = String(fields[0])
            keyID = bytes[0..<4].reduce(0) { $0 << 8 | UInt32($1) }
            self.bytes = Array(bytes[4...])
        }
    }

    /// The signed text, its final newline included.
    public var text: String
    public var signatures: [Signature]

    /// The most signature lines a note may carry (the spec asks verifiers to accept at least 16).
    public static let maximumSignatures = 100

    public init(text: String, signatures: [Signature]) {
        self.text = text
        self.signatures = signatures
    }

    /// The note's bytes: text, blank line, signature lines.
    public var serialized: String { text + "\n" + signatures.map(\.line).joined() }

    /// Parses a note: the text runs to the last blank line, every line after it is a signature.
    public init(parsing note: String) throws(NoteError) {
        guard note.unicodeScalars.allSatisfy({ $0 == "\n" || $0.value >= 0x20 }) else {
            throw NoteError("a note contains no control characters but newlines")
        }
        guard note.hasSuffix("\n") else { throw NoteError("a note ends with a newline") }
        guard let split = note.range(of: "\n\n", options: .backwards) else {
            throw NoteError("a note's text and its signatures are separated by a blank line")
        }
        text = String(note[..<note.index(after: split.lowerBound)])
        let lines = note[split.upperBound...].split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        guard !lines.isEmpty else { throw NoteError("a note carries at least one signature") }
        guard lines.count <= Self.maximumSignatures else { throw NoteError("a note carries at most \(Self.maximumSignatures) signatures") }
        var signatures: [Signature] = []
        for line in lines { signatures.append(try Signature(line: line)) }
        self.signatures = signatures
    }

    /// Key names are non-empty, without Unicode spaces or `+`.
    public static func isValidKeyName<S: StringProtocol>(_ name: S) -> Bool {
        !name.isEmpty && !name.unicodeScalars.contains { $0 == "+" || $0.properties.isWhitespace }
    }

    /// The signatures of `verifiers` that verify, as the spec says: a signature whose (name, key ID) no verifier
    /// has is ignored; one that matches a verifier but does not verify rejects the whole note; and a note with
    /// no verified signature is rejected.
    public func verified(by verifiers: [NoteVerifier]) throws(NoteError) -> [(NoteVerifier, Signature)] {
        var verified: [(NoteVerifier, Signature)] = []
        for signature in signatures {
            guard let verifier = verifiers.first(where: { $0.name == signature.name && $0.keyID == signature.keyID }) else { continue }
            guard verifier.isValid(signature, over: text) else {
                throw NoteError("the signature of \(signature.name) does not verify")
            }
            verified.append((verifier, signature))
        }
        guard !verified.isEmpty else { throw NoteError("no signature from a known key") }
        return verified
    }
}
