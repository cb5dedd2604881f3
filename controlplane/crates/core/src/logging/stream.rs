//! Structured log lines for `GET /logs/stream`: a tracing [`Layer`] that turns each event
//! that passed the level filter into a [`LogLine`] (time, level, target, message, fields)
//! and sends it on a `tokio::sync::broadcast` channel. Sending never blocks: a subscriber
//! that falls behind loses the oldest lines and is told how many (`RecvError::Lagged`).
//! With no subscriber the layer does no work beyond one atomic read. Owns no global state.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use time::OffsetDateTime;
use tokio::sync::broadcast;
use tracing::{
    field::{Field, Visit},
    Event, Level, Subscriber,
};
use tracing_subscriber::{layer::Context, Layer};
use utoipa::ToSchema;

/// Lines buffered per subscriber before it lags.
pub const STREAM_CAPACITY: usize = 1024;

/// Severity of a log line, ordered from `trace` (lowest) to `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected that the server handled.
    Warn,
    /// A failure.
    Error,
}

impl LogLevel {
    /// Parses `trace`, `debug`, `info`, `warn` or `error` (any case); `None` otherwise.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_lowercase().as_str() {
            "trace" => Self::Trace,
            "debug" => Self::Debug,
            "info" => Self::Info,
            "warn" | "warning" => Self::Warn,
            "error" => Self::Error,
            _ => return None,
        })
    }
}

impl From<Level> for LogLevel {
    fn from(l: Level) -> Self {
        match l {
            Level::TRACE => Self::Trace,
            Level::DEBUG => Self::Debug,
            Level::INFO => Self::Info,
            Level::WARN => Self::Warn,
            _ => Self::Error,
        }
    }
}

/// One structured log line, as sent in the `data` of a `log` event of `GET /logs/stream`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LogLine {
    /// When the event was recorded, RFC 3339 (UTC).
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub time: OffsetDateTime,
    /// Severity.
    pub level: LogLevel,
    /// Where it came from: the Rust module path (e.g. `bootlane::dhcp::server`), or the
    /// `log` target for records bridged from the `log` crate (aya).
    pub target: String,
    /// The message.
    pub message: String,
    /// The event's other fields, by name (numbers and booleans keep their JSON type;
    /// anything else is its `Debug` text).
    #[schema(value_type = Object)]
    pub fields: Map<String, Value>,
}

#[derive(Default)]
struct Fields {
    message: String,
    target: Option<String>,
    fields: Map<String, Value>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: Value) {
        match field.name() {
            "message" => {
                self.message = match value {
                    Value::String(s) => s,
                    other => other.to_string(),
                }
            }
            // Records bridged from `log` carry their real target in `log.target`.
            "log.target" => self.target = value.as_str().map(str::to_string),
            n if n.starts_with("log.") => {}
            n => {
                self.fields.insert(n.to_string(), value);
            }
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_string()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::String(value.to_string()));
    }
}

/// The layer feeding the broadcast channel of [`LogLine`]s.
pub struct StreamLayer {
    tx: broadcast::Sender<Arc<LogLine>>,
}

impl StreamLayer {
    /// A layer sending on `tx`.
    pub fn new(tx: broadcast::Sender<Arc<LogLine>>) -> Self {
        Self { tx }
    }
}

impl<S: Subscriber> Layer<S> for StreamLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if self.tx.receiver_count() == 0 {
            return;
        }
        let mut f = Fields::default();
        event.record(&mut f);
        let meta = event.metadata();
        let line = LogLine {
            time: OffsetDateTime::now_utc(),
            level: (*meta.level()).into(),
            target: f.target.unwrap_or_else(|| meta.target().to_string()),
            message: f.message,
            fields: f.fields,
        };
        // Err only when no receiver is left: nothing to do.
        let _ = self.tx.send(Arc::new(line));
    }
}
