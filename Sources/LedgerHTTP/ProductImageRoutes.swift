import Foundation
import Hummingbird
import LedgerCore
import LedgerServices

/// Picture types served, by file extension.
let productImageContentTypes = ["png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp", "gif": "image/gif"]

/// `GET /product_image/<file>`: the product pictures named in `/inventory`'s `image_uri`, served
/// from one configured directory.
///
/// No path traversal: the name must be a plain file name (letters, digits, `.`, `_`, `-`; no
/// leading dot, no `..`), it is looked up directly in the directory, and after resolving links
/// the file must still be inside the directory and be a regular file. Anything else is a 404 that
/// says nothing about what exists.
public struct ProductImageRoutes<Context: RequestContext>: Sendable {
    let directory: URL

    public init(directory: URL) {
        self.directory = directory.standardizedFileURL.resolvingSymlinksInPath()
    }

    /// The file to serve for `name`, or nil when the name is not acceptable or nothing is there.
    public func file(named name: String) -> URL? {
        guard (1...128).contains(name.utf8.count), !name.hasPrefix("."), !name.contains(".."),
            name.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0)) }),
            let ext = name.split(separator: ".").last.map({ $0.lowercased() }), productImageContentTypes[ext] != nil
        else {
            return nil
        }
        let candidate = directory.appendingPathComponent(name).resolvingSymlinksInPath()
        guard candidate.deletingLastPathComponent().path == directory.path else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            return nil
        }
        return candidate
    }

    public func register(on router: Router<Context>) {
        router.get("/product_image/:file") { _, context -> Response in
            let name = try context.parameters.require("file")
            guard let url = file(named: name), let data = FileManager.default.contents(atPath: url.path) else {
                throw APIError.notFound("no such product image")
            }
            var headers = HTTPFields()
            headers[.contentType] = productImageContentTypes[url.pathExtension.lowercased()] ?? "application/octet-stream"
            headers[.cacheControl] = "public, max-age=3600"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
    }
}
