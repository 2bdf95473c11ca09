//! Parsing one incoming JSON-RPC message.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::RpcError;
use crate::strict_json::{BeyondRange, Segment};

/// A request id: a string or an integer, never null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id, signed or unsigned 64-bit, echoed as it came (parsing refuses a number
    /// with a fraction or an exponent).
    Number(serde_json::Number),
    /// A string id.
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => f.write_str(s),
        }
    }
}

/// One request or notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// `None` for a notification.
    pub id: Option<RequestId>,
    /// The method name.
    pub method: String,
    /// The params object (empty when absent).
    pub params: Map<String, Value>,
    /// An integer beyond 64 bits in a `tools/call`'s `arguments` (its path inside them): the
    /// body is valid JSON, so the call is answered as a tool error naming the field, and the
    /// rounded value it was read as is never acted on.
    pub beyond_64_bits: Option<BeyondRange>,
}

impl Message {
    /// The `_meta` object of the params, if any.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.params.get("_meta").and_then(Value::as_object)
    }

    /// A `_meta` field.
    pub fn meta_field(&self, key: &str) -> Option<&Value> {
        self.meta().and_then(|m| m.get(key))
    }

    /// The name a `Mcp-Name` header must repeat (`params.name` or `params.uri`).
    pub fn target_name(&self) -> Option<&str> {
        self.params
            .get("name")
            .or_else(|| self.params.get("uri"))
            .and_then(Value::as_str)
    }
}

/// What arrived.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request or notification.
    Message(Message),
    /// A response from the client (never expected: clients send none in these revisions).
    Response(Option<RequestId>),
}

/// A message that could not be read, as the JSON-RPC error to answer with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", error.message)]
pub struct ParseError {
    /// The id, when it could be read.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: Box<RpcError>,
}

/// Parses exactly one JSON-RPC message from a body. Arrays (batches) are refused.
pub fn parse_message(body: &[u8]) -> Result<Incoming, ParseError> {
    let beyond = crate::strict_json::integer_beyond_64_bits(body);
    let value: Value = crate::strict_json::from_slice(body).map_err(|e| ParseError {
        id: None,
        error: Box::new(RpcError::parse_error(&e.to_string())),
    })?;
    let fail = |id: Option<RequestId>, detail: &str| ParseError {
        id,
        error: Box::new(RpcError::invalid_request(format!(
            "Invalid Request: {detail}"
        ))),
    };
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => {
            return Err(fail(
                None,
                "batches are not supported; send one message per request",
            ));
        }
        _ => return Err(fail(None, "the body must be one JSON-RPC object")),
    };
    let id = match obj.get("id") {
        None => None,
        Some(Value::Null) => return Err(fail(None, "id must be a string or an integer, not null")),
        Some(v) if v.is_string() || v.is_i64() || v.is_u64() => Some(
            serde_json::from_value::<RequestId>(v.clone())
                .map_err(|_| fail(None, "id must be a string or an integer"))?,
        ),
        Some(_) => return Err(fail(None, "id must be a string or an integer")),
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(fail(id, "jsonrpc must be \"2.0\""));
    }
    let Some(method) = obj.get("method") else {
        if obj.contains_key("result") || obj.contains_key("error") {
            return Ok(Incoming::Response(id));
        }
        return Err(fail(id, "method is missing"));
    };
    let Some(method) = method.as_str() else {
        return Err(fail(id, "method must be a string"));
    };
    let params = match obj.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p.clone(),
        Some(_) => return Err(fail(id, "params must be an object")),
    };
    let beyond_64_bits = match beyond.map(|b| in_arguments(method, b)) {
        None => None,
        Some(Ok(in_arguments)) => Some(in_arguments),
        Some(Err(elsewhere)) => {
            let error = RpcError::invalid_params(format!(
                "Invalid params: the integer {} at `{}` does not fit in 64 bits; send it as a string",
                elsewhere.integer,
                crate::strict_json::path_text(&elsewhere.path)
            ));
            return Err(ParseError {
                id,
                error: Box::new(error),
            });
        }
    };
    Ok(Incoming::Message(Message {
        id,
        method: method.to_owned(),
        params,
        beyond_64_bits,
    }))
}

/// The integer's place inside a `tools/call`'s arguments, or the integer as found when it is
/// anywhere else.
fn in_arguments(method: &str, beyond: BeyondRange) -> Result<BeyondRange, BeyondRange> {
    let inside = method == "tools/call"
        && beyond.path.len() > 2
        && beyond.path[0] == Segment::Key("params".into())
        && beyond.path[1] == Segment::Key("arguments".into());
    if !inside {
        return Err(beyond);
    }
    Ok(BeyondRange {
        path: beyond.path[2..].to_vec(),
        integer: beyond.integer,
    })
}

/// Decodes a header value that may use the `=?base64?...?=` form for non-ASCII text.
pub fn decode_header_value(raw: &str) -> Option<String> {
    match raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(raw.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests_and_refuses_batches() {
        let m = parse_message(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).unwrap();
        let Incoming::Message(m) = m else {
            panic!("a request")
        };
        assert_eq!(m.id, Some(RequestId::Number(1.into())));
        let e = parse_message(b"[]").unwrap_err();
        assert_eq!(e.error.code.code(), -32600);
        let e = parse_message(b"{").unwrap_err();
        assert_eq!(e.error.code.code(), -32700);
        let e = parse_message(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err();
        assert_eq!(e.error.code.code(), -32600);
    }

    #[test]
    fn decodes_base64_header_values() {
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
        assert_eq!(
            decode_header_value("=?base64?w6lsw6h2ZQ==?=").as_deref(),
            Some("élève")
        );
        assert_eq!(decode_header_value("=?base64?***?="), None);
    }
}
