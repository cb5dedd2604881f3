//! The HTTP server under the REST API, the web UI and HTTP boot: our own accept loop over
//! hyper's HTTP/1.1 connection (instead of `axum::serve`), so every connection is bounded.
//!
//! - **Caps** ([`limits::ConnTracker`]): `[api] max_connections` open at once over every
//!   listener and `[api] max_connections_per_client` from one address; a connection over
//!   a cap is closed as soon as it is accepted, before it costs a task or a read.
//! - **Header-read timeout** (`[api] header_read_timeout_secs`, hyper's
//!   `header_read_timeout`): a client must send a whole request header within it, counted
//!   from the accept and, on a keep-alive connection, from the end of the previous
//!   response, so it is also the keep-alive idle timeout. Slowloris clients (a partial
//!   header, then nothing) and idle connections are closed after it.
//! - **Write timeout** (`[api] write_timeout_secs`, `tokio-io-timeout` under hyper and
//!   TLS): a write that waits this long for the client to take the bytes closes the
//!   connection, so a client that requests a large file or an event stream and stops
//!   reading cannot hold its connection slot, task and open file forever. Each write that
//!   progresses starts the clock again: slow readers are served.
//! - **Accept errors** (`EMFILE`, `ENFILE`, `ENOBUFS`) pause the loop briefly instead of
//!   spinning; per-connection errors (`ECONNABORTED`) are skipped.
//! - **Graceful shutdown**: when the token is cancelled the listener stops accepting,
//!   every connection is told to finish its request in flight and close, and
//!   [`serve`] returns once they are closed or after [`SHUTDOWN_GRACE`].
//!
//! - **TLS** (optional, [`tls`]): the handshake runs in the connection's task, bounded by
//!   the header-read timeout; [`https_headers`] adds HSTS and marks cookies `Secure`.
//!
//! Handlers still get the client's address as `ConnectInfo<SocketAddr>`: it is put into
//! every request's extensions, where axum's extractor reads it.
//!
//! Holds no global state; the tracker is created by the caller and shared between
//! listeners.

pub mod acme;
pub mod limits;
pub mod tls;

use std::{io, net::SocketAddr, sync::Arc, time::Duration};

use axum::{extract::ConnectInfo, Router};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use self::limits::ConnTracker;

/// Longest wait, once shutdown is requested, for open connections to finish their
/// request in flight; connections still open after it (an event stream, a large
/// download) are dropped.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Pause of the accept loop after a resource error (`EMFILE` and the like), so a full
/// file table is not turned into a busy loop; connections wait in the listen backlog.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// How one listener serves its connections.
#[derive(Clone)]
pub struct ListenerOptions {
    /// Name in logs and metrics labels: `api` or `boot`.
    pub name: &'static str,
    /// `[api] header_read_timeout_secs`.
    pub header_read_timeout: Duration,
    /// `[api] write_timeout_secs`.
    pub write_timeout: Duration,
    /// TLS on this listener, or plain HTTP.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Serves `router` on `listener` until `token` is cancelled, every connection admitted
/// through `tracker` (see the module docs), then waits for open connections as described
/// there.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tracker: Arc<ConnTracker>,
    opts: ListenerOptions,
    token: CancellationToken,
) {
    let tasks = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = token.cancelled() => break,
            r = listener.accept() => r,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                if !is_connection_error(&e) {
                    // EMFILE/ENFILE/ENOBUFS: wait for descriptors to free up.
                    tracing::warn!(listener = opts.name, "HTTP accept failed: {e}");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
                continue;
            }
        };
        let guard = match tracker.admit(peer.ip()) {
            Ok(g) => g,
            Err(why) => {
                tracker.record_refusal(opts.name, peer.ip(), why);
                // Closing now frees the descriptor before anything is read.
                drop(stream);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_write_timeout(Some(opts.write_timeout));
        let stream = Box::pin(stream);
        let (router, opts, token) = (router.clone(), opts.clone(), token.clone());
        tasks.spawn(async move {
            match opts.tls.clone() {
                None => serve_connection(stream, peer, router, &opts, token).await,
                Some(acceptor) => match tokio::time::timeout(opts.header_read_timeout, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => serve_connection(tls, peer, router, &opts, token).await,
                    Ok(Err(e)) => tracing::debug!(listener = opts.name, %peer, "TLS handshake failed: {e}"),
                    Err(_) => tracing::debug!(listener = opts.name, %peer, "TLS handshake timed out"),
                },
            }
            drop(guard);
        });
    }
    drop(listener);
    tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tasks.wait()).await.is_err() {
        tracing::info!(
            listener = opts.name,
            open = tasks.len(),
            "HTTP connections still open after the shutdown grace period are dropped"
        );
    }
}

/// Serves one connection with hyper's HTTP/1.1 server until it closes, the header-read
/// timeout fires, or `token` asks for a graceful close.
async fn serve_connection<I>(io: I, peer: SocketAddr, router: Router, opts: &ListenerOptions, token: CancellationToken)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        tower::ServiceExt::oneshot(router.clone(), req)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(opts.header_read_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(io), svc).with_upgrades();
    tokio::pin!(conn);
    let result = tokio::select! {
        r = conn.as_mut() => r,
        () = token.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        // Timeouts, resets and malformed requests are the client's business: debug only.
        tracing::debug!(listener = opts.name, %peer, "HTTP connection ended: {e}");
    }
}

/// Errors of one connection rather than of the listener (the next accept may succeed).
fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// Middleware for a TLS listener: `Strict-Transport-Security: max-age=<max_age>` on every
/// answer (RFC 6797 §6.1; none when `max_age` is 0), and the `Secure` attribute added to
/// every `Set-Cookie` that lacks it (RFC 6265 §4.1.2.5), so the session cookie is never
/// sent back over plain HTTP.
pub async fn https_headers(
    max_age: u64,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::{header, HeaderValue};
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    if max_age > 0 {
        if let Ok(v) = HeaderValue::from_str(&format!("max-age={max_age}")) {
            h.insert(header::STRICT_TRANSPORT_SECURITY, v);
        }
    }
    let cookies: Vec<HeaderValue> = h.get_all(header::SET_COOKIE).iter().cloned().collect();
    if !cookies.is_empty() {
        h.remove(header::SET_COOKIE);
        for c in cookies {
            let secure = c
                .to_str()
                .map(|s| s.split(';').any(|a| a.trim().eq_ignore_ascii_case("secure")))
                .unwrap_or(true);
            let v = if secure {
                c
            } else {
                let mut b = c.as_bytes().to_vec();
                b.extend_from_slice(b"; Secure");
                HeaderValue::from_bytes(&b).unwrap_or(c)
            };
            h.append(header::SET_COOKIE, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use axum::{
        body::Body,
        http::{header, Request},
        middleware,
        response::{AppendHeaders, IntoResponse},
        routing::get,
        Router,
    };
    use tower::ServiceExt;

    #[tokio::test]
    async fn https_headers_add_hsts_and_secure_cookies() {
        let app = Router::new()
            .route(
                "/",
                get(|| async {
                    (
                        AppendHeaders([
                            (header::SET_COOKIE, "a=1; HttpOnly; Path=/"),
                            (header::SET_COOKIE, "b=2; Secure"),
                        ]),
                        "ok",
                    )
                        .into_response()
                }),
            )
            .layer(middleware::from_fn(|r, n| super::https_headers(600, r, n)));
        let resp = app
            .oneshot(Request::get("/").body(Body::empty()).expect("request"))
            .await
            .expect("answer");
        assert_eq!(resp.headers()[header::STRICT_TRANSPORT_SECURITY], "max-age=600");
        let cookies: Vec<_> = resp
            .headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| v.to_str().expect("ascii").to_string())
            .collect();
        assert_eq!(cookies, ["a=1; HttpOnly; Path=/; Secure", "b=2; Secure"]);
    }

    /// A client that asks for a large answer and stops reading: with the write timeout its
    /// connection is closed (the slot is free again within a few seconds); a client that
    /// keeps reading gets the whole answer even though it takes longer than the timeout.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_client_that_stops_reading_is_closed_and_a_slow_reader_is_served() {
        use std::{
            io::{Read, Write},
            time::{Duration, Instant},
        };
        const BIG: usize = 64 << 20;
        let app = Router::new().route("/big", get(|| async { vec![b'x'; BIG] }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let tracker = super::limits::ConnTracker::new(16, 16);
        let token = tokio_util::sync::CancellationToken::new();
        let opts = super::ListenerOptions {
            name: "test",
            header_read_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(1),
            tls: None,
        };
        let server = tokio::spawn(super::serve(listener, app, tracker.clone(), opts, token.clone()));
        let connect = move |rcvbuf: Option<usize>| {
            let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
            if let Some(n) = rcvbuf {
                s.set_recv_buffer_size(n).expect("SO_RCVBUF");
            }
            s.connect(&addr.into()).expect("connect");
            let mut s = std::net::TcpStream::from(s);
            s.write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n").expect("request");
            s
        };
        // The stalled client: connected, asked, never reads.
        let stalled = tokio::task::spawn_blocking(move || connect(Some(4096)))
            .await
            .expect("connect");
        let t0 = Instant::now();
        while tracker.open() != 0 {
            assert!(
                t0.elapsed() < Duration::from_secs(8),
                "the stalled connection is still open after {:?}",
                t0.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        drop(stalled);
        // The slow reader: at most 256 KiB every 10 ms, far below what the server could
        // send, so the server's writes wait, but never for a whole second at a time.
        let got = tokio::task::spawn_blocking(move || {
            let mut s = connect(None);
            let (mut total, mut buf) = (0usize, vec![0u8; 256 << 10]);
            let t0 = Instant::now();
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => total += n,
                }
                if total >= BIG || t0.elapsed() > Duration::from_secs(60) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            (total, t0.elapsed())
        })
        .await
        .expect("reader");
        assert!(
            got.0 >= BIG,
            "the slow reader got {} of {BIG} bytes in {:?}",
            got.0,
            got.1
        );
        assert!(
            got.1 > Duration::from_secs(1),
            "the read outlasted the write timeout: {:?}",
            got.1
        );
        token.cancel();
        server.await.expect("server");
    }
}
