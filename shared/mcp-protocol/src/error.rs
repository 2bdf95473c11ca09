//! JSON-RPC error codes and the error object.

use serde_json::{Value, json};

/// The error codes this server emits. MCP reserves -32020..-32099 and defines only three.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// -32700: the body is not JSON.
    ParseError,
    /// -32600: JSON, but not a single valid JSON-RPC request or notification.
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: bad params (missing `_meta` fields, unknown tool, bad cursor).
    InvalidParams,
    /// -32603: the server failed.
    InternalError,
    /// -32020: a required MCP header is missing or differs from the body.
    HeaderMismatch,
    /// -32021: the request needs a client capability the client did not declare.
    MissingRequiredClientCapability,
    /// -32022: the protocol version is not one this server speaks.
    UnsupportedProtocolVersion,
}

impl ErrorCode {
    /// The numeric code.
    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
        }
    }
}

/// A JSON-RPC error with the HTTP status the transport must answer it with.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The code.
    pub code: ErrorCode,
    /// One sentence for people.
    pub message: String,
    /// Structured detail.
    pub data: Option<Value>,
    /// The HTTP status (the spec names 400 and 404 for some cases; others are 200).
    pub http_status: u16,
}

impl RpcError {
    fn new(code: ErrorCode, message: impl Into<String>, http_status: u16) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
            http_status,
        }
    }

    /// Adds structured detail.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The body is not JSON.
    pub fn parse_error(detail: &str) -> Self {
        Self::new(ErrorCode::ParseError, format!("Parse error: {detail}"), 400)
    }

    /// Not a single JSON-RPC request or notification.
    pub fn invalid_request(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, detail, 400)
    }

    /// No such method (HTTP 404 so clients can tell it from a missing endpoint by the body).
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::MethodNotFound,
            format!("Method not found: {method}"),
            404,
        )
        .with_data(json!({"method": method}))
    }

    /// A required `_meta` field or param is missing or malformed (HTTP 400).
    pub fn malformed_params(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, detail, 400)
    }

    /// Params are well-formed but name something that does not exist (unknown tool, bad
    /// cursor): a JSON-RPC error on an HTTP 200.
    pub fn invalid_params(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, detail, 200)
    }

    /// A header is missing or differs from the body.
    pub fn header_mismatch(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::HeaderMismatch, detail, 400)
    }

    /// The version is not supported; names the supported ones.
    pub fn unsupported_version(requested: &str) -> Self {
        Self::new(
            ErrorCode::UnsupportedProtocolVersion,
            "Unsupported protocol version",
            400,
        )
        .with_data(json!({"supported": crate::SUPPORTED_VERSIONS, "requested": requested}))
    }

    /// A client capability the request needs is missing.
    pub fn missing_capability(capabilities: Value) -> Self {
        Self::new(
            ErrorCode::MissingRequiredClientCapability,
            "Missing required client capability",
            400,
        )
        .with_data(json!({"requiredCapabilities": capabilities}))
    }

    /// The server failed; the message never carries the cause (it is logged instead).
    pub fn internal(request_id: &str) -> Self {
        Self::new(
            ErrorCode::InternalError,
            format!("Internal error (request {request_id})"),
            500,
        )
    }

    /// The error object.
    pub fn to_json(&self) -> Value {
        let mut e = json!({"code": self.code.code(), "message": self.message});
        if let Some(data) = &self.data {
            e["data"] = data.clone();
        }
        e
    }
}
