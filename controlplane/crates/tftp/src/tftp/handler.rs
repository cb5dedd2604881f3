//! The pure half of a read request: map the file name to a file under the root
//! ([`bootlane_boot::boot::resolve_in_root`]) and negotiate options (RFC 2347) — blksize
//! (RFC 2348), timeout and tsize (RFC 2349), windowsize (RFC 7440). The transfer itself
//! (sockets, timers) lives in [`super::server`]. A [`GeneratedFiles`] source (the PXELINUX
//! configurations of [`bootlane_boot::boot::pxelinux`]) answers names missing from the root with
//! bytes made per request. Holds no state besides the root and that source.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use super::packet::{errcode, Request};
use bootlane_boot::boot::{resolve_in_root, PathError};

/// RFC 1350 block size, used when the client does not negotiate `blksize`.
pub const DEFAULT_BLKSIZE: usize = 512;
/// Largest `blksize` (RFC 2348 §2: 65464).
pub const MAX_BLKSIZE: usize = 65464;
/// Largest `windowsize` granted (RFC 7440 allows 65535; more than 64 blocks in flight
/// buys nothing and costs memory per transfer).
pub const MAX_WINDOW: u16 = 64;

/// The negotiated parameters of one transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Negotiated {
    /// Data bytes per block.
    pub blksize: usize,
    /// Blocks sent before waiting for an ACK.
    pub windowsize: u16,
    /// Retransmission timeout the client asked for (`timeout` option), if any.
    pub timeout: Option<Duration>,
    /// The OACK to send (empty: no option accepted, start with DATA 1).
    pub oack: Vec<(String, String)>,
}

/// A read request that can be served.
#[derive(Debug, Clone)]
pub struct ReadPlan {
    /// The file (canonical path under the root).
    pub path: PathBuf,
    /// Its size in bytes at open time.
    pub size: u64,
    /// Negotiated parameters.
    pub opts: Negotiated,
    /// The bytes to send instead of the file's (a generated file; `path` is then its
    /// name, not a file on disk).
    pub content: Option<Arc<[u8]>>,
}

/// A refusal: the TFTP error code and message sent to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// RFC 1350 error code.
    pub code: u16,
    /// Message (no secrets: never the server's own paths).
    pub message: String,
}

/// Decides what to do with a request. Implementations must not panic on any input.
pub trait TftpHandler: Send + Sync + 'static {
    /// Resolves a request to a file and its transfer parameters, or a refusal.
    ///
    /// # Errors
    /// A [`Refusal`] to send as an ERROR packet.
    fn open(&self, req: &Request) -> Result<ReadPlan, Refusal>;

    /// [`TftpHandler::open`] knowing the client's address (what the server calls); by
    /// default the address is not used.
    ///
    /// # Errors
    /// A [`Refusal`] to send as an ERROR packet.
    fn open_from(&self, req: &Request, peer: SocketAddr) -> Result<ReadPlan, Refusal> {
        let _ = peer;
        self.open(req)
    }
}

pub use bootlane_boot::boot::generated::GeneratedFiles;

/// Serves files from a root directory, read-only.
#[derive(Clone)]
pub struct FsHandler {
    root: PathBuf,
    generated: Option<Arc<dyn GeneratedFiles>>,
}

impl std::fmt::Debug for FsHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FsHandler")
            .field("root", &self.root)
            .field("generated", &self.generated.is_some())
            .finish()
    }
}

impl FsHandler {
    /// A handler rooted at `root`.
    pub fn new(root: PathBuf) -> Self {
        Self { root, generated: None }
    }

    /// Answers names missing from the root from `generated`.
    pub fn with_generated(mut self, generated: Option<Arc<dyn GeneratedFiles>>) -> Self {
        self.generated = generated;
        self
    }

    fn open_at(&self, req: &Request, peer: Option<SocketAddr>) -> Result<ReadPlan, Refusal> {
        let refuse = |code, message: &str| Refusal {
            code,
            message: message.to_string(),
        };
        if req.write {
            return Err(refuse(errcode::ACCESS, "read-only server"));
        }
        // netascii is served byte for byte (boot files are binary; every PXE client asks
        // for octet); mail mode is obsolete (RFC 1350 §1 notes it should not be used).
        if req.mode != "octet" && req.mode != "netascii" {
            return Err(refuse(errcode::ILLEGAL, "unsupported transfer mode"));
        }
        let path = match resolve_in_root(&self.root, &req.filename) {
            Ok(p) => p,
            Err(PathError::NotFound(_)) => {
                // A name the root lacks may be a generated file (a file on disk wins).
                let bytes = match (&self.generated, peer) {
                    (Some(g), Some(peer)) => g.generate(&req.filename, peer),
                    _ => None,
                };
                let Some(bytes) = bytes else {
                    return Err(refuse(errcode::NOT_FOUND, "file not found"));
                };
                let size = bytes.len() as u64;
                return Ok(ReadPlan {
                    opts: negotiate(req, size),
                    path: PathBuf::from(&req.filename),
                    size,
                    content: Some(bytes.into()),
                });
            }
            Err(PathError::Outside(_) | PathError::Invalid(_)) => {
                return Err(refuse(errcode::ACCESS, "access violation"))
            }
        };
        let size = std::fs::metadata(&path)
            .map_err(|_| refuse(errcode::NOT_FOUND, "file not found"))?
            .len();
        Ok(ReadPlan {
            opts: negotiate(req, size),
            path,
            size,
            content: None,
        })
    }
}

/// Negotiates the options of `req` for a file of `size` bytes (RFC 2347 §2: options the
/// server does not know or refuses are left out of the OACK; values out of range are
/// ignored, except blksize/windowsize above the maximum, which are lowered).
pub fn negotiate(req: &Request, size: u64) -> Negotiated {
    let mut n = Negotiated {
        blksize: DEFAULT_BLKSIZE,
        windowsize: 1,
        timeout: None,
        oack: Vec::new(),
    };
    for (k, v) in &req.options {
        // An option sent twice counts once, the first accepted value: the OACK must name
        // each option once with the value the transfer uses (a second `blksize` once
        // made the OACK say 2048 while 1024-byte blocks were sent; found by fuzzing).
        if n.oack.iter().any(|(o, _)| o == k) {
            continue;
        }
        let Ok(num) = v.trim().parse::<u64>() else {
            continue;
        };
        match k.as_str() {
            "blksize" if num >= 8 => {
                n.blksize = (num as usize).min(MAX_BLKSIZE);
                n.oack.push((k.clone(), n.blksize.to_string()));
            }
            "timeout" if (1..=255).contains(&num) => {
                n.timeout = Some(Duration::from_secs(num));
                n.oack.push((k.clone(), num.to_string()));
            }
            // RFC 2349 §4: in a read request tsize is 0 and the server answers the size.
            "tsize" => n.oack.push((k.clone(), size.to_string())),
            "windowsize" if num >= 1 => {
                n.windowsize = (num.min(u64::from(MAX_WINDOW))) as u16;
                n.oack.push((k.clone(), n.windowsize.to_string()));
            }
            _ => {}
        }
    }
    // Bound the memory one transfer holds: a window of blksize × windowsize bytes is kept
    // for retransmission, so a client asking for 65464 × 64 would pin 4 MiB per transfer
    // (GiB across max_transfers). The window is shrunk, and the OACK says so (RFC 7440 §4
    // lets the server answer a smaller windowsize).
    if n.blksize * usize::from(n.windowsize) > MAX_WINDOW_BYTES {
        n.windowsize = (MAX_WINDOW_BYTES / n.blksize).max(1) as u16;
        if let Some(o) = n.oack.iter_mut().find(|(k, _)| k == "windowsize") {
            o.1 = n.windowsize.to_string();
        }
    }
    n
}

/// Most bytes of file data one transfer's window may hold (blksize × windowsize).
pub const MAX_WINDOW_BYTES: usize = 256 * 1024;

impl TftpHandler for FsHandler {
    fn open(&self, req: &Request) -> Result<ReadPlan, Refusal> {
        self.open_at(req, None)
    }

    fn open_from(&self, req: &Request, peer: SocketAddr) -> Result<ReadPlan, Refusal> {
        self.open_at(req, Some(peer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(opts: &[(&str, &str)]) -> Request {
        Request {
            write: false,
            filename: "f".into(),
            mode: "octet".into(),
            options: opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    #[test]
    fn negotiation() {
        let n = negotiate(&req(&[]), 10);
        assert_eq!((n.blksize, n.windowsize, n.oack.len()), (512, 1, 0));
        let n = negotiate(&req(&[("tsize", "0")]), 1234);
        assert_eq!(n.oack, vec![("tsize".to_string(), "1234".to_string())]);
        let n = negotiate(
            &req(&[("blksize", "99999"), ("windowsize", "1000"), ("timeout", "3")]),
            0,
        );
        assert_eq!(n.blksize, MAX_BLKSIZE);
        // The window is bounded by MAX_WINDOW_BYTES as well as MAX_WINDOW.
        assert_eq!(n.windowsize, (MAX_WINDOW_BYTES / MAX_BLKSIZE) as u16);
        assert_eq!(n.timeout, Some(Duration::from_secs(3)));
        assert_eq!(n.oack.len(), 3);
        let n = negotiate(&req(&[("blksize", "1024"), ("windowsize", "1000")]), 0);
        assert_eq!(n.windowsize, MAX_WINDOW);
        let n = negotiate(
            &req(&[("blksize", "4"), ("timeout", "0"), ("windowsize", "x"), ("foo", "1")]),
            0,
        );
        assert_eq!((n.blksize, n.windowsize, n.oack.len()), (512, 1, 0));
    }
}
