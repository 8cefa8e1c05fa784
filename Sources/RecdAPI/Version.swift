/// The version recd and recctl report.
public enum RecdVersion {
    public static let current = "0.1.0"
}
