//! The wire protocol: JSON-RPC 2.0 framing and the MCP vocabulary a tools server needs.
//!
//! Pure data and pure functions: no I/O, no async, no HTTP types, so the same code serves the
//! HTTP handler, the stdio transport and a future edge runtime. We write the types ourselves
//! instead of using `rmcp`'s model (see ARCHITECTURE.md, "Protocol types"): the 2026-07-28
//! revision's stateless `_meta`, `resultType` and caching fields must sit beside legacy
//! `initialize` on one endpoint, and we need every error's exact code and HTTP status.

mod error;
mod message;
pub mod strict_json;

pub use error::{ErrorCode, RpcError};
pub use message::{Incoming, Message, ParseError, RequestId, decode_header_value, parse_message};

use serde_json::{Value, json};

/// The current revision, spoken natively.
pub const LATEST_VERSION: &str = "2026-07-28";
/// Legacy revisions served without sessions through `initialize`.
/// (2025-03-26 too: ADR 21.)
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
/// Every revision this server answers.
pub const SUPPORTED_VERSIONS: &[&str] = &["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

/// `_meta` key of the request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client's self-description.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the requested log level (opt-in to `notifications/message`).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of the server's self-description in every result.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Whether the revision is one this server answers.
pub fn is_supported(version: &str) -> bool {
    SUPPORTED_VERSIONS.contains(&version)
}

/// Whether the revision is a legacy one (handshake era).
pub fn is_legacy(version: &str) -> bool {
    LEGACY_VERSIONS.contains(&version)
}

/// The server's name and version, as placed in results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// Machine name.
    pub name: String,
    /// Version text.
    pub version: String,
    /// Human title.
    pub title: String,
}

impl ServerInfo {
    /// The `Implementation` object.
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "version": self.version, "title": self.title})
    }
}

/// Whether declared client capabilities take form-mode elicitation: an `elicitation` object
/// naming `form`, or an empty one (which meant form mode before URL mode was added). A client
/// that names only `url`, or sends something other than an object, is never sent a form.
pub fn elicits_forms(capabilities: &Value) -> bool {
    capabilities
        .get("elicitation")
        .and_then(Value::as_object)
        .is_some_and(|modes| modes.is_empty() || modes.contains_key("form"))
}

/// A successful JSON-RPC response.
pub fn response(id: &RequestId, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error response; `id` is `null` when the request's id could not be read.
pub fn error_response(id: Option<&RequestId>, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()})
}

/// A JSON-RPC notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}
