import Capture
import XCTest

final class PCMRingBufferTests: XCTestCase {
    func testWrapsAroundAndKeepsOrder() {
        let ring = PCMRingBuffer(capacityFrames: 5, channels: 2)
        var out = [Int16](repeating: 0, count: 10)
        for round in 0..<7 {
            let input: [Int16] = (0..<6).map { Int16(round * 100 + $0) }   // 3 frames
            XCTAssertEqual(input.withUnsafeBufferPointer { ring.write($0, frames: 3) }, 3)
            let n = out.withUnsafeMutableBufferPointer { ring.read(into: $0, minFrames: 3) }
            XCTAssertEqual(n, 3)
            XCTAssertEqual(Array(out[0..<6]), input)
        }
        XCTAssertEqual(ring.droppedFrames, 0)
    }

    /// The device ring of a conversion: a device's own bytes, 3 a frame (S24 packed, mono), kept
    /// whole and in order across the wrap, while the conversion thread lags behind.
    func testADeviceRingKeepsOddSizedFramesWholeAcrossTheWrap() {
        let ring = FrameRing<UInt8>(capacityFrames: 7, channels: 3)
        var out = [UInt8](repeating: 0, count: 3 * 7)
        var next: UInt8 = 0
        for _ in 0..<9 {
            let input: [UInt8] = (0..<12).map { _ in next &+= 1; return next }   // 4 frames
            XCTAssertEqual(input.withUnsafeBufferPointer { ring.write($0, frames: 4) }, 4)
            XCTAssertEqual(out.withUnsafeMutableBufferPointer { ring.read(into: $0, minFrames: 4) }, 4)
            XCTAssertEqual(Array(out[0..<12]), input)
        }
        XCTAssertEqual(ring.droppedFrames, 0)
    }

    func testAFullRingDropsAndCountsInsteadOfBlocking() {
        let ring = PCMRingBuffer(capacityFrames: 4, channels: 1)
        let input: [Int16] = [1, 2, 3, 4, 5, 6]
        XCTAssertEqual(input.withUnsafeBufferPointer { ring.write($0, frames: 6) }, 4)
        XCTAssertEqual(ring.droppedFrames, 2)
        var out = [Int16](repeating: 0, count: 8)
        XCTAssertEqual(out.withUnsafeMutableBufferPointer { ring.read(into: $0, minFrames: 1) }, 4)
        XCTAssertEqual(Array(out[0..<4]), [1, 2, 3, 4])
    }

    func testCloseReleasesAWaitingReaderWithWhatIsLeft() {
        let ring = PCMRingBuffer(capacityFrames: 100, channels: 1)
        let input: [Int16] = [7, 8]
        input.withUnsafeBufferPointer { _ = ring.write($0, frames: 2) }
        let done = expectation(description: "reader returns")
        Thread.detachNewThread {
            var out = [Int16](repeating: 0, count: 100)
            let first = out.withUnsafeMutableBufferPointer { ring.read(into: $0, minFrames: 50) }
            let second = out.withUnsafeMutableBufferPointer { ring.read(into: $0, minFrames: 50) }
            XCTAssertEqual(first, 2)
            XCTAssertEqual(second, 0)
            done.fulfill()
        }
        Thread.sleep(forTimeInterval: 0.05)
        ring.close()
        wait(for: [done], timeout: 5)
    }
}

final class RingFlushMarkTests: XCTestCase {
    /// A pause marks the ring: the reader gets what came before without waiting for a full block, and
    /// is told it reached the mark.
    func testAMarkReleasesAReaderWaitingForAFullBlockAndSaysWhenItIsReached() {
        let ring = PCMRingBuffer(capacityFrames: 100, channels: 1)
        let input: [Int16] = [1, 2, 3]
        input.withUnsafeBufferPointer { _ = ring.write($0, frames: 3) }
        ring.markFlush()
        var out = [Int16](repeating: 0, count: 2)
        var r = out.withUnsafeMutableBufferPointer { ring.readBlock(into: $0, minFrames: 50) }
        XCTAssertEqual(r.frames, 2)
        XCTAssertFalse(r.flush, "one frame before the mark is still unread")
        r = out.withUnsafeMutableBufferPointer { ring.readBlock(into: $0, minFrames: 50) }
        XCTAssertEqual(r.frames, 1)
        XCTAssertTrue(r.flush)
        // Nothing is left and no mark: a read waits again (released here by close).
        ring.markFlush()
        r = out.withUnsafeMutableBufferPointer { ring.readBlock(into: $0, minFrames: 50) }
        XCTAssertEqual(r.frames, 0)
        XCTAssertTrue(r.flush, "(0, flush) is not the end")
        ring.close()
        r = out.withUnsafeMutableBufferPointer { ring.readBlock(into: $0, minFrames: 50) }
        XCTAssertEqual(r.frames, 0)
        XCTAssertFalse(r.flush)
    }
}
