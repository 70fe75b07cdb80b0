import Foundation

/// Our own product pictures: a deterministic placeholder PNG per product name (a colour field
/// and a centred disc, colours derived from the name), so the demo catalog ships no third-party
/// images. The encoder is minimal and dependency-free: 8-bit RGB, stored (uncompressed) deflate
/// blocks in a zlib stream, CRC-32 per chunk, Adler-32 over the image data.
public enum PlaceholderImage {
    /// A `size`×`size` PNG for `name`; the same name always gives the same bytes.
    public static func png(for name: String, size: Int = 160) -> [UInt8] {
        let seed = fnv1a(name)
        let background = color(seed)
        let foreground = color(seed >> 24 ^ 0x9E37_79B9)
        // Integer geometry: inside the disc when (2x − (n−1))² + (2y − (n−1))² ≤ (0.6·n)².
        let diameter = size * 6 / 10
        var raw: [UInt8] = []
        raw.reserveCapacity(size * (size * 3 + 1))
        for y in 0..<size {
            raw.append(0)  // filter type: none
            for x in 0..<size {
                let dx = 2 * x - (size - 1)
                let dy = 2 * y - (size - 1)
                let pixel = dx * dx + dy * dy <= diameter * diameter ? foreground : background
                raw.append(contentsOf: [pixel.0, pixel.1, pixel.2])
            }
        }
        return encode(width: size, height: size, rgbRows: raw)
    }

    /// PNG bytes for 8-bit RGB rows, each row prefixed with its filter byte.
    static func encode(width: Int, height: Int, rgbRows raw: [UInt8]) -> [UInt8] {
        var header = bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [8, 2, 0, 0, 0]  // bit depth 8, colour type RGB, deflate, adaptive filters, no interlace
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            + chunk("IHDR", header) + chunk("IDAT", zlibStored(raw)) + chunk("IEND", [])
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return bigEndian(UInt32(data.count)) + typeBytes + data + bigEndian(Checksum.crc32(typeBytes + data))
    }

    /// A zlib stream of stored deflate blocks (at most 65,535 bytes each).
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65_535, data.count - offset)
            out.append(offset + length == data.count ? 1 : 0)  // BFINAL, BTYPE = stored
            out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            out += data[offset..<(offset + length)]
            offset += length
        } while offset < data.count
        return out + bigEndian(Checksum.adler32(data))
    }

    /// The PNG container's checksums: CRC-32 (ISO 3309) per chunk, Adler-32 per zlib stream.
    public enum Checksum {
        public static func crc32(_ bytes: [UInt8]) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            }
            return ~crc
        }

        public static func adler32(_ bytes: [UInt8]) -> UInt32 {
            var a: UInt32 = 1
            var b: UInt32 = 0
            for byte in bytes {
                a = (a + UInt32(byte)) % 65_521
                b = (b + a) % 65_521
            }
            return b << 16 | a
        }
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func fnv1a(_ text: String) -> UInt32 {
        var hash: UInt32 = 0x811C_9DC5
        for byte in text.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        return hash
    }

    /// A mid-saturation colour from 21 bits of the seed.
    private static func color(_ seed: UInt32) -> (UInt8, UInt8, UInt8) {
        (UInt8(64 + (seed & 0x7F)), UInt8(64 + (seed >> 8 & 0x7F)), UInt8(64 + (seed >> 16 & 0x7F)))
    }
}
