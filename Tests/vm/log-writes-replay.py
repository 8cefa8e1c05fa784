#!/usr/bin/env python3
"""Reads and replays a dm-log-writes log (the kernel's Documentation/admin-guide/device-mapper/log-writes.rst;
xfstests' replay-log is not packaged in Debian 12).

  log-writes-replay.py LOG list
      prints one JSON line per entry that matters: {"index", "kind": "flush"|"fua"|"mark", "mark"}
  log-writes-replay.py LOG replay BASE.img OUT.img UNTIL
      OUT.img = BASE.img with entries 0..UNTIL (inclusive) written over it: the disk as a power cut
      right after entry UNTIL leaves it (everything before a flush is on the disk; a volatile cache
      may have kept later writes too, which the state at the next flush covers).
      With OUT.img already at an earlier entry FROM (a previous call), pass FROM as a fifth argument
      to write only entries FROM+1..UNTIL.

Log layout (little-endian): sector 0 holds the super block {magic u64 = 0x6a736677736872,
version u64 = 1, nr_entries u64, sectorsize u32}; entries follow from sector 1, each one sector
{sector u64, nr_sectors u64, flags u64, data_len u64} (a mark's name follows in the same sector),
then the written data (nr_sectors sectors, none for a discard). Flags: FLUSH 1, FUA 2, DISCARD 4,
MARK 8, METADATA 16.
"""
import json
import struct
import sys

MAGIC = 0x6A736677736872
FLUSH, FUA, DISCARD, MARK = 1, 2, 4, 8


def entries(path):
    """Yields (index, sector, nr_sectors, flags, mark, data_offset, sectorsize)."""
    with open(path, "rb") as f:
        magic, version, count, sectorsize = struct.unpack("<QQQI", f.read(28))
        if magic != MAGIC or version != 1:
            raise SystemExit(f"{path}: not a dm-log-writes log (magic {magic:#x}, version {version})")
        offset = sectorsize
        for index in range(count):
            f.seek(offset)
            head = f.read(sectorsize)
            sector, nr_sectors, flags, data_len = struct.unpack("<QQQQ", head[:32])
            mark = head[32:32 + data_len].split(b"\0")[0].decode() if flags & MARK else None
            yield index, sector, nr_sectors, flags, mark, offset + sectorsize, sectorsize
            offset += sectorsize
            if not flags & DISCARD:
                offset += nr_sectors * sectorsize


def main():
    log, command = sys.argv[1], sys.argv[2]
    if command == "list":
        for index, _, nr, flags, mark, _, _ in entries(log):
            if flags & MARK:
                print(json.dumps({"index": index, "kind": "mark", "mark": mark}))
            elif flags & FLUSH:
                print(json.dumps({"index": index, "kind": "flush", "sectors": nr}))
            elif flags & FUA:
                print(json.dumps({"index": index, "kind": "fua", "sectors": nr}))
        return 0
    if command == "replay":
        base, out, until = sys.argv[3], sys.argv[4], int(sys.argv[5])
        start = int(sys.argv[6]) + 1 if len(sys.argv) > 6 else 0
        if start == 0:
            with open(base, "rb") as src, open(out, "wb") as dst:
                while chunk := src.read(1 << 22):
                    dst.write(chunk)
        with open(log, "rb") as src, open(out, "r+b") as dst:
            for index, sector, nr, flags, _, data_at, size in entries(log):
                if index > until:
                    break
                if index < start or flags & MARK or nr == 0:
                    continue
                if flags & DISCARD:
                    dst.seek(sector * size)
                    dst.write(b"\0" * (nr * size))
                    continue
                src.seek(data_at)
                dst.seek(sector * size)
                dst.write(src.read(nr * size))
        return 0
    raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    sys.exit(main())
