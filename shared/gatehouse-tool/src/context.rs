//! What guards, interceptors and tools see of the call.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

/// The transport's request headers, lower-cased names (absent over stdio).
pub type Headers = BTreeMap<String, String>;

/// Dispatch-time facts about a call: what guards and interceptors receive.
#[derive(Debug, Clone)]
pub struct ExecutionContext {
    /// The tool being called.
    pub tool_name: String,
    /// The request id assigned by the server (for logs and error texts).
    pub request_id: String,
    /// The protocol revision of this request.
    pub protocol_version: String,
    /// The client's declared capabilities (empty object when none).
    pub client_capabilities: Value,
    /// HTTP headers, when the transport has them (shared with the request, not copied).
    pub headers: Option<Arc<Headers>>,
    /// The arguments as normalized (after coercions).
    pub arguments: Map<String, Value>,
    /// The bound connection, when the transport authenticated one.
    pub caller: Option<crate::Caller>,
    /// When the call started, in Unix seconds, from the server's clock: the time every rule
    /// of the call uses, so that tests can set it.
    pub now: i64,
    #[doc(hidden)]
    pub metadata: Arc<BTreeMap<String, Value>>,
}

impl ExecutionContext {
    /// A metadata value: the tool's own, else the server-wide default.
    pub fn metadata(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    /// A header value (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .as_ref()?
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// Request-scoped notifications a tool emits; the transport sends them before the final
/// response when the request asked for them (`progressToken`, log level), else drops them.
#[derive(Debug, Clone, Default)]
pub struct Notifications {
    sent: Arc<Mutex<Vec<Value>>>,
}

impl Notifications {
    pub(crate) fn push(&self, message: Value) {
        self.sent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(message);
    }

    /// Everything emitted so far.
    pub fn take(&self) -> Vec<Value> {
        std::mem::take(
            &mut *self
                .sent
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

/// The levels a request may ask log messages at (RFC 5424's, as MCP names them), least
/// severe first.
pub const LOG_LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The richer context a tool body receives: the execution context, what its effect class lets
/// it plan (`writes`: nothing for a read, [`Writes`](crate::Writes) for a silent write,
/// [`TwoStepWrites`](crate::TwoStepWrites) for the two-step classes), logging and progress.
#[derive(Debug, Clone)]
pub struct ToolContext<E: crate::Effect> {
    /// The execution context.
    pub exec: Arc<ExecutionContext>,
    /// `inputResponses` of a retried request (multi round-trip requests).
    pub input_responses: Option<Value>,
    /// The tool's own state from a retried multi round-trip request (verified by the pipeline).
    pub request_state: Option<String>,
    /// The writes this call plans; the pipeline commits them if the call succeeds.
    pub writes: E::Plan,
    #[doc(hidden)]
    pub progress_token: Option<Value>,
    #[doc(hidden)]
    pub log_level: Option<usize>,
    #[doc(hidden)]
    pub progress_sent: Arc<Mutex<f64>>,
    #[doc(hidden)]
    pub notifications: Notifications,
}

/// The context the pipeline builds for a call before it knows the tool's effect type: a
/// registered tool's runner turns it into the tool's own [`ToolContext`].
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct CallContext {
    pub exec: Arc<ExecutionContext>,
    pub input_responses: Option<Value>,
    pub request_state: Option<String>,
    pub writes: crate::Writes,
    pub progress_token: Option<Value>,
    pub log_level: Option<usize>,
    pub progress_sent: Arc<Mutex<f64>>,
    pub notifications: Notifications,
}

impl CallContext {
    /// The tool's view: its class's plan over the call's writes.
    pub fn typed<E: crate::Effect>(self) -> ToolContext<E> {
        ToolContext {
            exec: self.exec,
            input_responses: self.input_responses,
            request_state: self.request_state,
            writes: E::plan(self.writes),
            progress_token: self.progress_token,
            log_level: self.log_level,
            progress_sent: self.progress_sent,
            notifications: self.notifications,
        }
    }
}

impl<E: crate::Effect> ToolContext<E> {
    /// Reports progress; sent only when the request carried a `progressToken`. Progress must
    /// grow: a value not above the last one is dropped.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else {
            return;
        };
        let mut last = self
            .progress_sent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if progress <= *last {
            return;
        }
        *last = progress;
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notifications
            .push(mcp_protocol::notification("notifications/progress", params));
    }

    /// Logs to the client; sent only when the request asked for this level or a lower one.
    pub fn log(&self, level: &str, data: Value) {
        let Some(min) = self.log_level else { return };
        let Some(rank) = LOG_LEVELS.iter().position(|l| *l == level) else {
            return;
        };
        if rank >= min {
            self.notifications.push(mcp_protocol::notification(
                "notifications/message",
                json!({"level": level, "logger": self.exec.tool_name, "data": data}),
            ));
        }
    }
}

/// The rank of an MCP log level (`debug` lowest), or `None` for a name MCP does not define.
pub fn log_rank(level: &str) -> Option<usize> {
    LOG_LEVELS.iter().position(|l| *l == level)
}
