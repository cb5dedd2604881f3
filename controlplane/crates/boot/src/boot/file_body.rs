//! The HTTP response body that streams a byte range of a boot file (kernels, initrds,
//! ISOs, files inside a mounted image) to a client: [`FileBody`]. Each chunk is read with
//! one `preadv2(RWF_NOWAIT)` straight into the buffer handed to hyper, served on the
//! worker when the page cache holds it, and only otherwise read on tokio's blocking pool.
//! A fleet of machines fetching the same initrd therefore costs one copy into the
//! socket per byte, with no hand-off to another thread (the fleet round of
//! `scripts/bench-media.sh`: 200 parallel Range downloads, against nginx). tower-http's
//! `ServeFile` still answers the headers (Range, conditional requests, 416); its body is
//! replaced by this one.

use std::{
    fs::File,
    future::Future,
    io,
    os::{fd::AsRawFd, unix::fs::FileExt},
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use tokio::task::JoinHandle;

/// Bytes read per chunk: 256 KiB, so 200 clients in flight hold at most about 50 MiB.
pub const CHUNK: usize = 256 << 10;

/// A body of `len` bytes of `file` from `offset`. A file that ends early (truncated while
/// served) ends the body with an `UnexpectedEof` error, so hyper closes the connection
/// rather than send a response shorter than its `Content-Length`.
pub struct FileBody {
    file: Arc<File>,
    pos: u64,
    end: u64,
    pending: Option<JoinHandle<io::Result<Bytes>>>,
}

impl FileBody {
    /// The bytes `offset..offset + len` of `file`.
    pub fn new(file: File, offset: u64, len: u64) -> Self {
        Self {
            file: Arc::new(file),
            pos: offset,
            end: offset.saturating_add(len),
            pending: None,
        }
    }

    /// As an axum body.
    pub fn into_body(self) -> axum::body::Body {
        axum::body::Body::new(self.map_err(axum::Error::new))
    }
}

/// Reads up to `want` bytes at `pos` only if the page cache already holds them
/// (`RWF_NOWAIT`); `Ok(None)` when the read would have to wait for the disk.
fn read_cached(file: &File, pos: u64, want: usize) -> io::Result<Option<Bytes>> {
    let mut buf = BytesMut::with_capacity(want);
    let spare = buf.spare_capacity_mut();
    let iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: want,
    };
    // SAFETY: the iovec points at `want` bytes of `buf`'s spare capacity, which outlives
    // the call; the kernel writes at most `want` bytes there.
    let n = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, pos as libc::off_t, libc::RWF_NOWAIT) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            // Not cached (EAGAIN), or a kernel/filesystem without RWF_NOWAIT.
            Some(libc::EAGAIN) | Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => Ok(None),
            _ => Err(e),
        };
    }
    // SAFETY: the kernel initialised the first `n` bytes.
    unsafe { buf.set_len(n as usize) };
    Ok((n > 0).then(|| buf.freeze()))
}

fn read_blocking(file: &File, pos: u64, want: usize) -> io::Result<Bytes> {
    let mut buf = vec![0u8; want];
    let n = file.read_at(&mut buf, pos)?;
    buf.truncate(n);
    Ok(Bytes::from(buf))
}

impl http_body::Body for FileBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, io::Error>>> {
        let this = &mut *self;
        let chunk = if let Some(h) = this.pending.as_mut() {
            let r = match Pin::new(h).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(r) => r,
            };
            this.pending = None;
            r.map_err(io::Error::other).and_then(|r| r)
        } else {
            if this.pos >= this.end {
                return Poll::Ready(None);
            }
            let want = (this.end - this.pos).min(CHUNK as u64) as usize;
            match read_cached(&this.file, this.pos, want) {
                Ok(Some(b)) => Ok(b),
                Ok(None) => {
                    let (f, pos) = (this.file.clone(), this.pos);
                    this.pending = Some(tokio::task::spawn_blocking(move || read_blocking(&f, pos, want)));
                    return self.poll_frame(cx);
                }
                Err(e) => Err(e),
            }
        };
        Poll::Ready(Some(match chunk {
            Ok(b) if b.is_empty() => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file ended before the range did (truncated while served?)",
            )),
            Ok(b) => {
                this.pos += b.len() as u64;
                Ok(http_body::Frame::data(b))
            }
            Err(e) => Err(e),
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.pos >= self.end && self.pending.is_none()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.end.saturating_sub(self.pos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn collect(mut b: FileBody) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(f) = b.frame().await {
            out.extend_from_slice(&f?.into_data().expect("data frame"));
        }
        Ok(out)
    }

    /// Ranges across chunk boundaries come back byte-exact, cached or not.
    #[tokio::test]
    async fn ranges_are_byte_exact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("initrd");
        let data: Vec<u8> = (0..(3 * CHUNK + 1234)).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        for (off, len) in [
            (0, data.len()),
            (1, CHUNK),
            (CHUNK - 5, CHUNK + 10),
            (data.len() - 1, 1),
            (5, 0),
        ] {
            let b = FileBody::new(File::open(&path).unwrap(), off as u64, len as u64);
            assert_eq!(http_body::Body::size_hint(&b).exact(), Some(len as u64));
            assert_eq!(collect(b).await.unwrap(), &data[off..off + len], "{off}+{len}");
        }
        // The blocking path gives the same bytes.
        let f = File::open(&path).unwrap();
        assert_eq!(read_blocking(&f, 100, 50).unwrap(), &data[100..150]);
    }

    /// A range past the end of a file that shrank ends in an error, not a short body.
    #[tokio::test]
    async fn a_truncated_file_ends_in_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k");
        std::fs::write(&path, vec![1u8; 1000]).unwrap();
        let b = FileBody::new(File::open(&path).unwrap(), 0, 5000);
        let e = collect(b).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }
}
