// The one encoding of the worker wire's headers, derived from Codable: every request and reply is
// written by the same Encoder/Decoder, so an operation is declared once (its Codable struct) and no
// field can be left out of a hand-kept form. Binary, not JSON: a recording sends a block six times a
// second (more with a converter or a camera), and with JSON for these a 10 s FLAC take cost recd and
// its worker 0.116 s of CPU instead of 0.097 (bench/record-cpu.sh, release; this coding: 0.101).
// A round trip's coding is ~10 µs either way in a tight loop: it is the cold code path between
// blocks (Foundation's JSON parser and writer) that costs.
//
// Everything is a slot: [length: UInt32 LE][that many bytes], or the length 0xFFFFFFFF alone for nil.
// A keyed container (a struct, an enum's case) is a run of slots, key then value; an unkeyed one
// (an array) a run of values; a number its own little-endian bytes; a string its UTF-8.
// Keys are looked up by name, so a decoder does not depend on the order fields were written in.
import Foundation

public enum WireCoding {
    /// Appends `value` to `bytes` as one slot.
    public static func append<T: Encodable>(_ value: T, to bytes: inout [UInt8]) throws {
        let sink = Sink(bytes)
        bytes = []
        defer { bytes = sink.bytes }
        try WireEncoder(sink: sink, codingPath: []).nested(nil).encode(value)
    }

    /// Decodes the slot at `offset` of `bytes` as a `T` and moves `offset` past it. Malformed bytes
    /// throw a `DecodingError` that says where.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8], at offset: inout Int) throws -> T {
        let (range, end) = try slot(in: bytes, at: offset, before: bytes.count, path: [])
        offset = end
        return try WireDecoder(bytes: bytes, range: range, codingPath: []).decode(T.self)
    }

    /// A message with bytes after its last slot.
    public static func leftOver(_ count: Int) -> DecodingError { corrupt([], "\(count) bytes after its end") }

    fileprivate static let null = UInt32.max

    /// The slot at `at` (nil: a nil), and where the next begins.
    fileprivate static func slot(in bytes: [UInt8], at: Int, before end: Int, path: [any CodingKey]) throws -> (Range<Int>?, Int) {
        guard end - at >= 4 else { throw corrupt(path, "a length cut off (\(end - at) of 4 bytes)") }
        let n = bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
        if n == null { return (nil, at + 4) }
        guard Int(n) <= end - at - 4 else { throw corrupt(path, "a slot of \(n) bytes where \(end - at - 4) are left") }
        return (at + 4 ..< at + 4 + Int(n), at + 4 + Int(n))
    }

    fileprivate static func corrupt(_ path: [any CodingKey], _ text: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: path, debugDescription: "a malformed worker message: \(text)"))
    }

    /// The bytes being written, shared by the containers of one `append`.
    fileprivate final class Sink {
        var bytes: [UInt8]
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        /// Starts a slot; its length is set by `fit` as its content is written.
        func open() -> Int {
            bytes.append(contentsOf: [0, 0, 0, 0])
            return bytes.count - 4
        }

        /// Sets the length of each slot in `open` (the enclosing ones too) to end here. Containers have
        /// no end call, so every write fits the slots it is in.
        func fit(_ open: [Int]) {
            for at in open { set(UInt32(bytes.count - at - 4), at: at) }
        }

        func set(_ length: UInt32, at: Int) {
            withUnsafeBytes(of: length.littleEndian) { for i in 0..<4 { bytes[at + i] = $0[i] } }
        }
    }
}

/// A value written whole into its slot (no container).
private protocol WirePrimitive {
    init?(wire: ArraySlice<UInt8>)
    func wire(into bytes: inout [UInt8])
}
private protocol WireInteger: WirePrimitive, FixedWidthInteger {}
extension WireInteger {
    init?(wire: ArraySlice<UInt8>) {
        guard wire.count == MemoryLayout<Self>.size else { return nil }
        self = Self(littleEndian: wire.withUnsafeBytes { $0.loadUnaligned(as: Self.self) })
    }
    func wire(into bytes: inout [UInt8]) { withUnsafeBytes(of: littleEndian) { bytes.append(contentsOf: $0) } }
}
extension Int: WireInteger {}
extension Int8: WireInteger {}
extension Int16: WireInteger {}
extension Int32: WireInteger {}
extension Int64: WireInteger {}
extension UInt: WireInteger {}
extension UInt8: WireInteger {}
extension UInt16: WireInteger {}
extension UInt32: WireInteger {}
extension UInt64: WireInteger {}
extension Bool: WirePrimitive {
    init?(wire: ArraySlice<UInt8>) {
        guard wire.count == 1, wire.first! <= 1 else { return nil }
        self = wire.first! == 1
    }
    func wire(into bytes: inout [UInt8]) { bytes.append(self ? 1 : 0) }
}
extension Double: WirePrimitive {
    init?(wire: ArraySlice<UInt8>) { guard let bits = UInt64(wire: wire) else { return nil }; self.init(bitPattern: bits) }
    func wire(into bytes: inout [UInt8]) { bitPattern.wire(into: &bytes) }
}
extension Float: WirePrimitive {
    init?(wire: ArraySlice<UInt8>) { guard let bits = UInt32(wire: wire) else { return nil }; self.init(bitPattern: bits) }
    func wire(into bytes: inout [UInt8]) { bitPattern.wire(into: &bytes) }
}
extension String: WirePrimitive {
    init?(wire: ArraySlice<UInt8>) { self.init(validating: wire, as: UTF8.self) }
    func wire(into bytes: inout [UInt8]) { bytes.append(contentsOf: utf8) }
}

private struct WireKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Writes one value into the last of its `open` slots.
private struct WireEncoder: Encoder, SingleValueEncodingContainer {
    let sink: WireCoding.Sink
    var open: [Int] = []
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(sink: WireCoding.Sink, open: [Int] = [], codingPath: [any CodingKey]) {
        self.sink = sink; self.open = open; self.codingPath = codingPath
    }

    /// A new slot in this one (after a slot of `key`, in a keyed container), and its encoder.
    func nested(_ key: (any CodingKey)?) -> WireEncoder {
        if let key {
            let at = sink.open()
            key.stringValue.wire(into: &sink.bytes)
            sink.fit(open + [at])
        }
        let at = sink.open()
        sink.fit(open)
        return WireEncoder(sink: sink, open: open + [at], codingPath: key.map { codingPath + [$0] } ?? codingPath)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> { KeyedEncodingContainer(Keyed(encoder: self)) }
    func unkeyedContainer() -> any UnkeyedEncodingContainer { Unkeyed(encoder: self) }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() { sink.set(WireCoding.null, at: open.last!) }

    func encode<T: Encodable>(_ value: T) throws {
        if let primitive = value as? any WirePrimitive {
            primitive.wire(into: &sink.bytes)
            sink.fit(open)
        } else {
            try value.encode(to: self)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: WireEncoder
        var codingPath: [any CodingKey] { encoder.codingPath }
        func encodeNil(forKey key: Key) { encoder.nested(key).encodeNil() }
        func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try encoder.nested(key).encode(value) }
        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) -> KeyedEncodingContainer<N> {
            encoder.nested(key).container(keyedBy: N.self)
        }
        func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { encoder.nested(key).unkeyedContainer() }
        func superEncoder() -> any Encoder { encoder.nested(WireKey(stringValue: "super")) }
        func superEncoder(forKey key: Key) -> any Encoder { encoder.nested(key) }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let encoder: WireEncoder
        var count = 0
        var codingPath: [any CodingKey] { encoder.codingPath }
        mutating func next() -> WireEncoder { count += 1; return encoder.nested(nil) }
        mutating func encodeNil() { next().encodeNil() }
        mutating func encode<T: Encodable>(_ value: T) throws { try next().encode(value) }
        mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) -> KeyedEncodingContainer<N> { next().container(keyedBy: N.self) }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { next().unkeyedContainer() }
        mutating func superEncoder() -> any Encoder { next() }
    }
}

/// Reads the value of one slot (`range`; nil: a nil).
private struct WireDecoder: Decoder, SingleValueDecodingContainer {
    let bytes: [UInt8]
    let range: Range<Int>?
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let slots = try contents()
        guard slots.count % 2 == 0 else { throw WireCoding.corrupt(codingPath, "a key without its value") }
        var entries: [(key: String, value: Range<Int>?)] = []
        for i in stride(from: 0, to: slots.count, by: 2) {
            guard let key = slots[i].flatMap({ String(wire: bytes[$0]) }) else { throw WireCoding.corrupt(codingPath, "a key that is not text") }
            entries.append((key, slots[i + 1]))
        }
        return KeyedDecodingContainer(Keyed(decoder: self, entries: entries))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed(decoder: self, elements: try contents()) }
    func singleValueContainer() -> any SingleValueDecodingContainer { self }
    func decodeNil() -> Bool { range == nil }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard let primitive = T.self as? any WirePrimitive.Type else { return try T(from: self) }   // (an Optional's reads the nil)
        guard let range else {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: codingPath, debugDescription: "a nil in the worker message"))
        }
        guard let value = primitive.init(wire: bytes[range]) else { throw WireCoding.corrupt(codingPath, "not a \(T.self) (\(range.count) bytes)") }
        return value as! T
    }

    /// The slots this one holds (a container's).
    func contents() throws -> [Range<Int>?] {
        guard let range else {
            throw DecodingError.valueNotFound([Any].self, .init(codingPath: codingPath, debugDescription: "a nil for a container"))
        }
        var slots: [Range<Int>?] = [], at = range.lowerBound
        while at < range.upperBound {
            let (slot, next) = try WireCoding.slot(in: bytes, at: at, before: range.upperBound, path: codingPath)
            slots.append(slot)
            at = next
        }
        return slots
    }

    func child(_ range: Range<Int>?, _ key: any CodingKey) -> WireDecoder {
        WireDecoder(bytes: bytes, range: range, codingPath: codingPath + [key])
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: WireDecoder
        let entries: [(key: String, value: Range<Int>?)]
        var codingPath: [any CodingKey] { decoder.codingPath }
        var allKeys: [Key] { entries.compactMap { Key(stringValue: $0.key) } }
        func contains(_ key: Key) -> Bool { entries.contains { $0.key == key.stringValue } }

        func child(_ key: any CodingKey) throws -> WireDecoder {
            guard let entry = entries.first(where: { $0.key == key.stringValue }) else {
                throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "not in the worker message"))
            }
            return decoder.child(entry.value, key)
        }

        func decodeNil(forKey key: Key) throws -> Bool { try child(key).decodeNil() }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).decode(T.self) }
        func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
            try child(key).container(keyedBy: N.self)
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
        func superDecoder() throws -> any Decoder { try child(WireKey(stringValue: "super")) }
        func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        let decoder: WireDecoder
        let elements: [Range<Int>?]
        var currentIndex = 0
        var codingPath: [any CodingKey] { decoder.codingPath }
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        mutating func next() throws -> WireDecoder {
            guard !isAtEnd else { throw WireCoding.corrupt(codingPath, "fewer than \(currentIndex + 1) elements") }
            defer { currentIndex += 1 }
            return decoder.child(elements[currentIndex], WireKey(stringValue: "\(currentIndex)"))
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, elements[currentIndex] == nil else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(T.self) }
        mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> { try next().container(keyedBy: N.self) }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
        mutating func superDecoder() throws -> any Decoder { try next() }
    }
}
