// `GET /v1/devices`: what recd could capture from.

/// A V4L2 camera node with everything it can capture.
public struct CameraInfo: Codable, Sendable, Equatable {
    public struct Size: Codable, Sendable, Equatable {
        public var width: Int
        public var height: Int
        /// Frame rates offered at this size, fastest first.
        public var fps: [Double]
        public init(width: Int, height: Int, fps: [Double]) { self.width = width; self.height = height; self.fps = fps }
    }
    public struct Format: Codable, Sendable, Equatable {
        /// fourcc: `YUYV`, `NV12`, `MJPG`, ...
        public var pixelFormat: String
        public var description: String
        public var compressed: Bool
        public var sizes: [Size]
        public init(pixelFormat: String, description: String, compressed: Bool, sizes: [Size]) {
            self.pixelFormat = pixelFormat; self.description = description; self.compressed = compressed; self.sizes = sizes
        }
    }
    /// Device node (`/dev/video0`).
    public var device: String
    /// The driver's name for the card (`vivid`, `HD Pro Webcam C920`).
    public var name: String
    public var driver: String
    /// Why the node could not be queried (permission, busy); null when it could.
    @Nullable public var error: String?
    public var formats: [Format]
    public init(device: String, name: String, driver: String, error: String?, formats: [Format]) {
        self.device = device; self.name = name; self.driver = driver; self.error = error; self.formats = formats
    }
}

/// An ALSA capture PCM.
public struct AudioDeviceInfo: Codable, Sendable, Equatable {
    /// What a hardware PCM (`hw:`) can capture, read from its hardware parameters.
    public struct Capabilities: Codable, Sendable, Equatable {
        /// Sample formats among S16_LE, S24_LE, S24_3LE, S32_LE, FLOAT_LE (recd records S16_LE).
        public var formats: [String]
        public var minRate: Int
        public var maxRate: Int
        public var minChannels: Int
        public var maxChannels: Int
        public init(formats: [String], minRate: Int, maxRate: Int, minChannels: Int, maxChannels: Int) {
            self.formats = formats; self.minRate = minRate; self.maxRate = maxRate
            self.minChannels = minChannels; self.maxChannels = maxChannels
        }
    }
    /// The PCM name to pass as `--capture-device` (`hw:CARD=Loopback,DEV=1`, `default`, `pulse`).
    public var device: String
    /// ALSA's description of it.
    public var description: String
    /// For `hw:` PCMs that could be opened; plugin PCMs (`default`, `pulse`, `plughw:`…) convert
    /// whatever is asked and are not probed.
    @Nullable public var capabilities: Capabilities?
    /// Why a `hw:` PCM could not be probed (busy: another program records from it).
    @Nullable public var error: String?
    public init(device: String, description: String, capabilities: Capabilities? = nil, error: String? = nil) {
        self.device = device; self.description = description; self.capabilities = capabilities; self.error = error
    }
}

/// Reply to `GET /v1/devices`.
public struct DeviceList: Codable, Sendable, Equatable {
    public var audio: [AudioDeviceInfo]
    public var cameras: [CameraInfo]
    /// The devices recd records from now (its `--capture-device` and `--video-device`).
    public var configuredAudio: String
    public var configuredCamera: String
    public init(audio: [AudioDeviceInfo], cameras: [CameraInfo], configuredAudio: String, configuredCamera: String) {
        self.audio = audio; self.cameras = cameras; self.configuredAudio = configuredAudio; self.configuredCamera = configuredCamera
    }
}
