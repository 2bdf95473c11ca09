//! What one client may hold of `serve` (ADR 48): a connection that has begun a request's head
//! must finish it within the header timeout, a connection with no request in progress is
//! closed after the idle timeout, a request in progress longer than the request timeout (a
//! body trickled for good) has its connection closed, and at most so many connections are open
//! at once (further ones wait in the kernel's backlog until one closes). Without these, a few
//! sockets that send half a request and stop hold the server's connections and memory for good.
//!
//! A watchdog per connection reads what the connection's stream and service record (when a
//! head began arriving, when the request in progress began, when the last one ended) and closes
//! the connection when a bound is passed. Requests carry no timer of their own: the watchdog's
//! tick is the only clock, so a call pays two atomic stores for the bounds.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The bounds, from `serve`'s flags.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// From a head's first byte to its last.
    pub(crate) header: Duration,
    /// With no request in progress.
    pub(crate) idle: Duration,
    /// From a request's head to its answer (the body read included).
    pub(crate) request: Duration,
}

/// What a connection's stream and service record, read by its watchdog.
#[derive(Debug)]
pub(crate) struct Activity {
    opened: Instant,
    /// Requests in progress.
    busy: AtomicUsize,
    /// When the last request ended (ms after `opened`).
    last_done_ms: AtomicU64,
    /// When the request in progress began (ms after `opened`).
    busy_since_ms: AtomicU64,
    /// When bytes of a head first arrived with no request in progress (ms after `opened`,
    /// plus one; 0: none).
    head_started_ms: AtomicU64,
}

impl Activity {
    pub(crate) fn new() -> Arc<Activity> {
        Arc::new(Activity {
            opened: Instant::now(),
            busy: AtomicUsize::new(0),
            last_done_ms: AtomicU64::new(0),
            busy_since_ms: AtomicU64::new(0),
            head_started_ms: AtomicU64::new(0),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Bytes arrived: with no request in progress, a head has begun.
    fn read(&self) {
        self.read_at(self.now_ms());
    }

    fn read_at(&self, now_ms: u64) {
        if self.busy.load(Ordering::Relaxed) == 0 {
            let _ = self.head_started_ms.compare_exchange(
                0,
                now_ms + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    /// A request's head was read: its service runs.
    pub(crate) fn started(&self) {
        self.started_at(self.now_ms());
    }

    fn started_at(&self, now_ms: u64) {
        self.busy_since_ms.store(now_ms, Ordering::Relaxed);
        self.busy.fetch_add(1, Ordering::Relaxed);
        self.head_started_ms.store(0, Ordering::Relaxed);
    }

    /// A request was answered.
    pub(crate) fn ended(&self) {
        self.ended_at(self.now_ms());
    }

    fn ended_at(&self, now_ms: u64) {
        self.last_done_ms.store(now_ms, Ordering::Relaxed);
        self.busy.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether the connection has passed a bound at `now` (ms after it opened) and should
    /// close.
    fn overdue_at(&self, now: u64, limits: &Limits) -> bool {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        if self.busy.load(Ordering::Relaxed) > 0 {
            let since = self.busy_since_ms.load(Ordering::Relaxed);
            return now.saturating_sub(since) > ms(limits.request);
        }
        match self.head_started_ms.load(Ordering::Relaxed) {
            0 => now.saturating_sub(self.last_done_ms.load(Ordering::Relaxed)) > ms(limits.idle),
            started => now.saturating_sub(started - 1) > ms(limits.header),
        }
    }
}

/// Resolves once the connection has passed a bound (checked every quarter of the shortest one,
/// at least every second).
pub(crate) async fn overdue(activity: Arc<Activity>, limits: Limits) {
    let every = (limits.header.min(limits.idle).min(limits.request) / 4)
        .clamp(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        tokio::time::sleep(every).await;
        if activity.overdue_at(activity.now_ms(), &limits) {
            return;
        }
    }
}

/// A stream that tells its connection's [`Activity`] when bytes arrive.
#[derive(Debug)]
pub(crate) struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    pub(crate) fn new(inner: S, activity: Arc<Activity>) -> Self {
        Watched { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        header: Duration::from_millis(100),
        idle: Duration::from_millis(300),
        request: Duration::from_secs(60),
    };

    #[test]
    fn a_half_sent_head_is_overdue_after_the_header_timeout() {
        let a = Activity::new();
        a.read_at(1_000);
        assert!(!a.overdue_at(1_100, &LIMITS));
        assert!(a.overdue_at(1_101, &LIMITS), "the head began 101 ms ago");
    }

    #[test]
    fn a_request_in_progress_is_bounded_by_its_own_timeout_and_idle_counts_from_its_end() {
        let a = Activity::new();
        assert!(!a.overdue_at(300, &LIMITS), "a new connection, idle 300 ms");
        assert!(a.overdue_at(301, &LIMITS), "idle 301 ms, nothing sent");
        a.read_at(10);
        a.started_at(10);
        assert!(!a.overdue_at(10_000, &LIMITS), "busy 10 s of 60");
        assert!(
            a.overdue_at(60_011, &LIMITS),
            "busy past the request timeout"
        );
        a.read_at(10_001);
        a.ended_at(20_000);
        assert!(!a.overdue_at(20_300, &LIMITS), "idle 300 ms of 300");
        assert!(a.overdue_at(20_301, &LIMITS), "idle 301 ms");
        a.read_at(20_200);
        assert!(
            !a.overdue_at(20_300, &LIMITS),
            "the next head began 100 ms ago"
        );
        assert!(a.overdue_at(20_301, &LIMITS));
    }
}
