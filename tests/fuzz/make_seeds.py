#!/usr/bin/env python3
# make_seeds.py - writes the seed corpus of fuzz_ops.c into corpus/ (next
# to this script).  Each seed is a small, meaningful call sequence; the
# byte layout is the one LLVMFuzzerTestOneInput decodes (see fuzz_ops.c).
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def ts(t):
    """A timestamp argument: selector 0 (relative), int16 = t * 8."""
    return bytes([0]) + struct.pack("<h", t * 8)


def ts_max():
    """A timestamp near TDM_TIME_MAX (selector 6)."""
    return bytes([6]) + struct.pack("<h", 5)


def rec(key, t, value, ch=0, no_ts=False):
    return bytes([(ch << 4) | (8 if no_ts else 0) | 0, key]) + ts(t) + \
        bytes([value & 0xff])


def wm(t, ch=0):
    return bytes([(ch << 4) | 3]) + ts(t)


def status(idle, ch=0):
    return bytes([(ch << 4) | (8 if idle else 0) | 5])


def advance(ms):
    return bytes([6, ms])


END = bytes([0x3f])


def winop(asg, trig, size_idx, slide_b, offset, lat_idx, late, agg,
          two_ch=False, proc=False, trig_arg=None):
    b1 = asg | (4 if proc else 0) | (trig << 3)
    b5 = lat_idx | (8 if late else 0) | (agg << 4) | (0x80 if two_ch else 0)
    head = bytes([0, b1, size_idx, slide_b, offset & 0xff, b5, 0])
    if trig_arg is not None:
        head += bytes([trig_arg])
    return head


def join_hdr(lower, upper, lower_inc, upper_inc, late, two_ch=False):
    b3 = (1 if lower_inc else 0) | (2 if upper_inc else 0) | \
        (4 if late else 0) | (8 if two_ch else 0)
    return bytes([1, lower & 0xff, upper & 0xff, b3])


def jrec(side, key, t, value, ch=0):
    return bytes([(ch << 4) | (side << 3) | 0, key]) + ts(t) + \
        bytes([value & 0xff])


def jwm(side, t, ch=0):
    return bytes([(ch << 4) | (side << 3) | 3]) + ts(t)


JEND = bytes([0x37])

seeds = {
    # Tumbling 1000 ms (size index 6), lateness 1000 (index 3), side
    # output, sum: on-time firing, late firings, a late record, end.
    "tumbling_lateness": winop(0, 1, 6, 0, 0, 3, True, 1)
    + rec(0, 100, 1) + rec(1, 900, 2) + wm(999) + rec(0, 500, 4)
    + wm(1998) + rec(0, 10, 8) + wm(2000) + rec(0, 20, 16) + END,
    # Sliding 100/25 with offset 7, count, dropped late records.
    "sliding_offset": winop(1, 0, 5, 3, 7, 0, False, 0)
    + rec(2, 10, 1) + rec(2, 60, 1) + rec(3, 140, 1) + wm(120)
    + rec(2, 5, 1) + rec(3, 400, 1) + wm(401) + END,
    # Sessions, gap 10, lateness 10, min: touching merge, late merge.
    "session_merge": winop(2, 0, 4, 0, 0, 2, True, 2)
    + rec(0, 0, 5) + rec(0, 10, 3) + wm(25) + rec(0, 22, 1)
    + rec(0, -100, 9) + wm(100) + END,
    # Global window with a count trigger of 2, collect.
    "global_count": winop(3, 3, 0, 0, 0, 0, False, 5, trig_arg=1)
    + rec(0, 1, 1) + rec(0, 2, 2) + rec(1, 3, 3) + rec(0, 4, 4) + END,
    # Processing-time tumbling 10 ms, two channels, advance, idle/active.
    "proctime_two_channels": winop(0, 0, 4, 0, 0, 0, False, 0, two_ch=True,
                                   proc=True)
    + rec(0, 0, 1) + advance(5) + rec(1, 0, 1, ch=1) + advance(10)
    + status(True, ch=1) + wm(50) + status(False, ch=1) + advance(200)
    + END,
    # Continuous event-time trigger, tumbling 1000, several firings.
    "continuous": winop(0, 4, 6, 0, 0, 0, False, 1, trig_arg=5)
    + rec(0, 10, 1) + rec(0, 400, 1) + wm(350) + wm(999) + END,
    # Timestamps near TDM_TIME_MAX and a record without timestamp.
    "extremes": winop(1, 0, 6, 1, 0, 4, True, 4)
    + rec(0, 0, 1, no_ts=True) + bytes([0, 0]) + ts_max() + bytes([1])
    + bytes([3]) + ts_max() + END + rec(0, 1, 1),
    # Interval join [-5, 10], inclusive, late side output.
    "join_interval": join_hdr(-5, 10, True, True, True)
    + jrec(0, 0, 100, 1) + jrec(1, 0, 95, 2) + jrec(1, 0, 110, 3)
    + jwm(0, 105) + jwm(1, 105) + jrec(1, 0, 50, 4) + jrec(0, 0, 106, 5)
    + JEND,
    # Interval join with exclusive bounds, two channels, idleness.
    "join_exclusive_idle": join_hdr(0, 3, False, False, False, two_ch=True)
    + jrec(0, 1, 10, 1) + jrec(1, 1, 11, 1) + jrec(1, 1, 13, 1)
    + bytes([(1 << 4) | 5]) + jwm(0, 20) + jwm(1, 20) + jrec(0, 1, 5, 1)
    + JEND,
}

os.makedirs(HERE, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)
