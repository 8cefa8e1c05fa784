import FoundationEssentials

/// The one JSON dialect of the API: ISO 8601 dates with milliseconds, sorted keys (stable output).
public enum APIJSON {
    public static func encoder(pretty: Bool = false) -> JSONEncoder {
        let e = JSONEncoder()
        e.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
                                    : [.sortedKeys, .withoutEscapingSlashes]
        e.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(formatDate(date))
        }
        return e
    }

    public static func decoder() -> JSONDecoder {
        let d = JSONDecoder()
        d.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            let s = try c.decode(String.self)
            guard let date = parseDate(s) else {
                throw DecodingError.dataCorruptedError(in: c, debugDescription: "not an ISO 8601 date: \(s)")
            }
            return date
        }
        return d
    }

    /// `2025-10-25T15:42:07.123Z` (`DateText`).
    public static func formatDate(_ date: Date) -> String {
        DateText.format(date)
    }

    public static func parseDate(_ text: String) -> Date? {
        // RFC 3339 allows a lower-case `t` and `z` (its section 5.6), which Foundation's parser does not.
        let s = text.uppercased()
        if let d = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(s) { return d }
        return try? Date.ISO8601FormatStyle().parse(s)
    }
}

/// An optional that the API always writes, as `null` when it has no value.
///
/// Swift's synthesized `Encodable` leaves a nil optional out (`encodeIfPresent`), but the API
/// promises that every declared key is present, so that clients (and the OpenAPI document's
/// `required` lists) can rely on it. Marking the property `@Nullable` keeps the synthesized coding
/// and changes only that: the one mechanism instead of an `encode(to:)` written out per type.
@propertyWrapper
public struct Nullable<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    public var wrappedValue: Value?
    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        wrappedValue = c.decodeNil() ? nil : try c.decode(Value.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        if let v = wrappedValue { try c.encode(v) } else { try c.encodeNil() }
    }
}

extension KeyedDecodingContainer {
    /// A `@Nullable` key may also be absent (replies of older daemons, hand-written JSON).
    public func decode<V>(_ type: Nullable<V>.Type, forKey key: Key) throws -> Nullable<V> {
        try decodeIfPresent(type, forKey: key) ?? Nullable(wrappedValue: nil)
    }
}
