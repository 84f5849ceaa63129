"""The storage under test: devices and mounts as the kernel shows them, the safety guards, arrays (loop images,
devices, md RAID, paths), the page cache and the device counters."""
