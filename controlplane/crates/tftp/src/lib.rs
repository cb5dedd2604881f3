//! Bootlane's TFTP service (RFC 1350 with the blksize, tsize, timeout and windowsize options): reads from the boot root and the generated files, per-client and total transfer caps, access control on every request.

pub mod tftp;
