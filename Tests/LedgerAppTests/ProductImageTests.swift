import Foundation
import Hummingbird
import HummingbirdTesting
import LedgerApp
import LedgerHTTP
import LedgerServices
import Testing

@Suite struct PlaceholderImageTests {
    /// Walks the PNG's chunks, checking each CRC, and returns (type, data) pairs.
    func chunks(_ png: [UInt8]) throws -> [(String, [UInt8])] {
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var result: [(String, [UInt8])] = []
        var i = 8
        func u32(_ at: Int) -> UInt32 { png[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        while i < png.count {
            let length = Int(u32(i))
            let type = String(decoding: png[(i + 4)..<(i + 8)], as: UTF8.self)
            let data = Array(png[(i + 8)..<(i + 8 + length)])
            #expect(u32(i + 8 + length) == PlaceholderImage.Checksum.crc32(Array(type.utf8) + data), "CRC of \(type)")
            result.append((type, data))
            i += 12 + length
        }
        return result
    }

    @Test func isAValidDeterministicPNG() throws {
        let png = PlaceholderImage.png(for: "Clock", size: 64)
        #expect(png == PlaceholderImage.png(for: "Clock", size: 64))
        #expect(png != PlaceholderImage.png(for: "Pen", size: 64))
        let parsed = try chunks(png)
        #expect(parsed.map(\.0) == ["IHDR", "IDAT", "IEND"])
        #expect(parsed[0].1 == [0, 0, 0, 64, 0, 0, 0, 64, 8, 2, 0, 0, 0])
        // The zlib stream holds stored blocks whose payload is 64 rows of (filter byte + 64 RGB pixels).
        let idat = parsed[1].1
        #expect(idat[0] == 0x78 && idat[1] == 0x01)
        let length = Int(idat[3]) | Int(idat[4]) << 8
        #expect(length == 64 * (1 + 64 * 3))
        #expect(idat[2] == 1)  // a single, final block
    }

    @Test func checksumsMatchKnownValues() {
        #expect(PlaceholderImage.Checksum.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(PlaceholderImage.Checksum.adler32(Array("Wikipedia".utf8)) == 0x11E6_0398)
    }
}

@Suite struct ProductImageRoutesTests {
    func withImages(_ body: @escaping @Sendable (any TestClientProtocol, URL) async throws -> Void) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-images-\(UUID().uuidString)")
        let images = root.appendingPathComponent("images")
        try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        try Data(PlaceholderImage.png(for: "Clock")).write(to: images.appendingPathComponent("clock.png"))
        try Data("secret".utf8).write(to: root.appendingPathComponent("secret.png"))
        try Data("hidden".utf8).write(to: images.appendingPathComponent(".hidden.png"))
        try FileManager.default.createSymbolicLink(
            at: images.appendingPathComponent("link.png"),
            withDestinationURL: root.appendingPathComponent("secret.png")
        )
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        ProductImageRoutes(directory: images).register(on: router)
        try await Application(router: router).test(.router) { client in try await body(client, images) }
    }

    @Test func servesAnImageWithItsContentType() async throws {
        try await withImages { client, images in
            try await client.execute(uri: "/product_image/clock.png", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "image/png")
                #expect(Array(response.body.readableBytesView) == PlaceholderImage.png(for: "Clock"))
            }
        }
    }

    @Test(arguments: [
        "..%2Fsecret.png", "%2E%2E%2Fsecret.png", ".hidden.png", "link.png", "missing.png", "clock.txt",
        "..", "clock.png%00.txt", "images%2Fclock.png",
    ])
    func refusesAnythingOutsideOrOdd(name: String) async throws {
        try await withImages { client, _ in
            try await client.execute(uri: "/product_image/\(name)", method: .get) { response in
                #expect(response.status == .notFound, "\(name)")
                #expect(!String(buffer: response.body).contains("secret"))
            }
        }
    }
}
