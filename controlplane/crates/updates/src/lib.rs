//! Verified updates of Bootlane itself: the update source's manifest, downloads kept only once their SHA-256 and minisign signature check, and the install over the running binary.

pub mod updates;
