//! Gives the heap's freed memory back to the kernel. glibc's allocator keeps chunks freed
//! by the server's many short-lived buffers (HTTP bodies, JSON documents, sled's pages,
//! DNS batches) inside its per-thread arenas, where only the top of each arena is ever
//! returned on its own; under steady load that shows as RSS creeping up by a few hundred
//! KiB a minute with nothing live behind it. `malloc_trim(0)` also releases free pages in
//! the middle of the arenas (`madvise(MADV_DONTNEED)`), so [`trim_every`] calls it on a
//! fixed period. Other C libraries: nothing to do.
//!
//! Global state: none.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How often [`trim_every`] trims (60 s): a trim walks every arena, a few milliseconds.
pub const TRIM_EVERY: Duration = Duration::from_secs(60);

/// Returns free heap pages to the kernel now; `true` when glibc released any. Blocking
/// (a few milliseconds); always `false` where the C library is not glibc.
pub fn trim() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only walks and madvises the allocator's own free lists.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Calls [`trim`] on the blocking pool every `period` until `token` fires.
pub async fn trim_every(period: Duration, token: CancellationToken) {
    let mut tick = tokio::time::interval(period);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tick.tick() => {
                let _ = tokio::task::spawn_blocking(trim).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory freed in the middle of the heap is released: many blocks allocated, every
    /// other one freed (so nothing sits at the top to shrink), then a trim returns pages.
    #[test]
    fn trim_releases_freed_pages_inside_the_heap() {
        let mut blocks: Vec<Vec<u8>> = (0..4096).map(|i| vec![i as u8; 16 << 10]).collect();
        for (i, b) in blocks.iter_mut().enumerate() {
            if i % 2 == 0 {
                *b = Vec::new();
            }
        }
        assert_eq!(trim(), cfg!(all(target_os = "linux", target_env = "gnu")));
        assert!(blocks.iter().skip(1).step_by(2).all(|b| b.len() == 16 << 10));
    }
}
