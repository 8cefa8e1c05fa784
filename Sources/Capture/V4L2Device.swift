// A V4L2 device node: the file descriptor, its capabilities and what it can capture.
import CV4L2
import Foundation

/// A V4L2 pixel format's four-character code (`YUYV`, `NV12`, `MJPG`, ...).
public struct FourCC: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// `FourCC("YUYV")`: the code `v4l2_fourcc('Y','U','Y','V')` makes (a macro Swift cannot call).
    public init(_ text: StaticString) {
        let bytes = text.withUTF8Buffer { Array($0) }
        precondition(bytes.count == 4, "a fourcc has four characters")
        rawValue = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }
    public var description: String {
        let chars = (0..<4).map { Character(UnicodeScalar(UInt8((rawValue >> (8 * $0)) & 0xFF))) }
        return String(chars).trimmingCharacters(in: .whitespaces)
    }

    public static let yuyv = FourCC("YUYV")
    public static let mjpeg = FourCC("MJPG")
    public static let jpeg = FourCC("JPEG")
}

/// A frame rate as V4L2 gives it: `numerator / denominator` frames per second (the inverse of its
/// frame interval).
public struct FrameRate: Hashable, Sendable {
    public var numerator: Int
    public var denominator: Int
    public init(_ numerator: Int, _ denominator: Int = 1) { self.numerator = numerator; self.denominator = denominator }
    public var fps: Double { denominator == 0 ? 0 : Double(numerator) / Double(denominator) }
}

/// Owns an open V4L2 device node. `close()` is explicit; `deinit` closes a descriptor left open.
final class V4L2Device {
    let path: String
    let fd: Int32
    private(set) var isOpen = true

    /// Opens `path` non-blocking (DQBUF then answers EAGAIN instead of waiting: poll(2) does the waiting).
    init(path: String) throws(CaptureError) {
        self.path = path
        let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .videoUnavailable(device: path, call: "open", errno: errno) }
        self.fd = fd
    }

    deinit { if isOpen { Glibc.close(fd) } }

    func close() {
        guard isOpen else { return }
        isOpen = false
        Glibc.close(fd)
    }

    /// ioctl through the shim (EINTR retried). Returns errno on failure, nil on success.
    func ioctl<T>(_ request: UInt, _ arg: inout T) -> Int32? {
        guard isOpen else { return EBADF }   // never an fd number that may have been reused
        let rc = withUnsafeMutablePointer(to: &arg) { CV4L2_ioctl(fd, request, UnsafeMutableRawPointer($0)) }
        return rc == -1 ? errno : nil
    }

    /// ioctl that throws `CaptureError.videoUnavailable` naming `call`.
    func check<T>(_ request: UInt, _ arg: inout T, _ call: String) throws(CaptureError) {
        if let e = ioctl(request, &arg) { throw .videoUnavailable(device: path, call: call, errno: e) }
    }

    struct Capabilities {
        var driver: String
        var card: String
        /// The node's own capabilities (`device_caps` when the driver sets it).
        var caps: UInt32
        var canCapture: Bool { caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 }
        var canStream: Bool { caps & UInt32(V4L2_CAP_STREAMING) != 0 }
    }

    func capabilities() throws(CaptureError) -> Capabilities {
        var cap = v4l2_capability()
        if let e = ioctl(CV4L2_VIDIOC_QUERYCAP, &cap) {
            // ENOTTY: the node is not a V4L2 device at all.
            if e == ENOTTY { throw .videoUnsupported(device: path, detail: "it is not a V4L2 device (VIDIOC_QUERYCAP: \(String(cString: strerror(e))))") }
            throw .videoUnavailable(device: path, call: "VIDIOC_QUERYCAP", errno: e)
        }
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        return Capabilities(driver: Self.string(cap.driver), card: Self.string(cap.card), caps: caps)
    }

    struct FormatDescription {
        var fourcc: FourCC
        var description: String
        var compressed: Bool
    }

    /// Every capture pixel format (VIDIOC_ENUM_FMT until EINVAL).
    func formats() -> [FormatDescription] {
        var result: [FormatDescription] = []
        for index in 0..<256 {
            var d = v4l2_fmtdesc()
            d.index = UInt32(index)
            d.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            if ioctl(CV4L2_VIDIOC_ENUM_FMT, &d) != nil { break }
            result.append(FormatDescription(fourcc: FourCC(rawValue: d.pixelformat), description: Self.string(d.description),
                                            compressed: d.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0))
        }
        return result
    }

    /// The frame sizes of `format`: the discrete list, or for a stepwise/continuous range its
    /// minimum, maximum and the common sizes in between.
    func sizes(_ format: FourCC) -> [(width: Int, height: Int)] {
        var result: [(Int, Int)] = []
        for index in 0..<256 {
            var s = v4l2_frmsizeenum()
            s.index = UInt32(index)
            s.pixel_format = format.rawValue
            if ioctl(CV4L2_VIDIOC_ENUM_FRAMESIZES, &s) != nil { break }
            if s.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                result.append((Int(s.discrete.width), Int(s.discrete.height)))
            } else {
                let w = s.stepwise
                result.append((Int(w.min_width), Int(w.min_height)))
                for (cw, ch) in [(320, 180), (640, 360), (640, 480), (1280, 720), (1920, 1080)]
                where cw > w.min_width && cw < w.max_width && ch > w.min_height && ch < w.max_height {
                    result.append((cw, ch))
                }
                result.append((Int(w.max_width), Int(w.max_height)))
                break
            }
        }
        return result
    }

    /// The frame rates `format` offers at `width`×`height`, fastest first.
    func rates(_ format: FourCC, width: Int, height: Int) -> [FrameRate] {
        var result: [FrameRate] = []
        for index in 0..<256 {
            var f = v4l2_frmivalenum()
            f.index = UInt32(index)
            f.pixel_format = format.rawValue
            f.width = UInt32(width)
            f.height = UInt32(height)
            if ioctl(CV4L2_VIDIOC_ENUM_FRAMEINTERVALS, &f) != nil { break }
            if f.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                // An interval of n/d seconds is d/n frames per second.
                result.append(FrameRate(Int(f.discrete.denominator), Int(f.discrete.numerator)))
            } else {
                let s = f.stepwise
                result.append(FrameRate(Int(s.min.denominator), Int(s.min.numerator)))
                result.append(FrameRate(Int(s.max.denominator), Int(s.max.numerator)))
                break
            }
        }
        return result.sorted { $0.fps > $1.fps }
    }

    static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            let bytes = raw.prefix { $0 != 0 }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

/// A camera node as `recctl devices` shows it: what the driver says, or why it could not be opened.
public struct V4L2Camera: Sendable {
    public struct Format: Sendable {
        public var fourcc: String
        public var description: String
        public var compressed: Bool
        /// Each size with the frame rates offered at it, fastest first.
        public var sizes: [(width: Int, height: Int, fps: [Double])]
    }
    public var path: String
    public var card: String
    public var driver: String
    public var error: CaptureError?
    public var formats: [Format]
}

/// Cameras for `recctl devices`.
public enum V4L2DeviceList {
    /// Every `/dev/video*` node that captures video, with its formats, sizes and rates. Nodes that
    /// cannot be opened are listed with the reason (busy nodes can still be queried in V4L2).
    public static func cameras(directory: String = "/dev") -> [V4L2Camera] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasPrefix("video") && Int($0.dropFirst(5)) != nil }
            .sorted { Int($0.dropFirst(5))! < Int($1.dropFirst(5))! }
        var result: [V4L2Camera] = []
        for name in names {
            let path = directory + "/" + name
            let device: V4L2Device
            do { device = try V4L2Device(path: path) } catch {
                result.append(V4L2Camera(path: path, card: "", driver: "", error: error, formats: []))
                continue
            }
            defer { device.close() }
            guard let caps = try? device.capabilities(), caps.canCapture else { continue }
            let formats = device.formats().map { f in
                V4L2Camera.Format(fourcc: f.fourcc.description, description: f.description, compressed: f.compressed,
                                  sizes: device.sizes(f.fourcc).map { s in
                    (s.width, s.height, device.rates(f.fourcc, width: s.width, height: s.height).map(\.fps))
                })
            }
            result.append(V4L2Camera(path: path, card: caps.card, driver: caps.driver, error: nil, formats: formats))
        }
        return result
    }
}
