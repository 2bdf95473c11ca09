//! A tool call's plan: everything the call is, computed once from the message before anything
//! is read or checked.
//!
//! The transport asks for the plan before authenticating, to name the items the call will read
//! in the credential's batch ([`CallPlan::gate_keys`] for the *claimed* caller); the pipeline
//! derives the same keys again for the *authenticated* caller and looks the items up by them.
//! The normalization, the idempotency key and the digest are not recomputed: they do not
//! depend on who calls.

use std::sync::Arc;

use serde_json::{Map, Value};
use store::Key;

use crate::{ConnectionId, EffectClass, ReadAhead, TenantId, ToolError, ToolSpec, gates};

/// What one `tools/call` is, before anything is checked.
#[derive(Debug)]
pub(crate) struct CallPlan {
    /// The tool called.
    pub(crate) spec: Arc<ToolSpec>,
    /// The arguments after normalization, without the gates' own fields; or why they are
    /// invalid (answered after the visibility check, so a hidden tool says so first).
    pub(crate) args: Result<Map<String, Value>, ToolError>,
    /// One warning per coercion made while normalizing.
    pub(crate) warnings: Vec<String>,
    /// The client's `idempotency_key` (silent writes only).
    pub(crate) idempotency_key: Option<String>,
    /// SHA-256 of the canonical normalized arguments.
    pub(crate) digest: String,
    /// The record handles the arguments name, at most a few.
    pub(crate) records: Vec<String>,
}

impl CallPlan {
    /// The plan of calling `spec` with `arguments`.
    pub(crate) fn new(
        spec: Arc<ToolSpec>,
        arguments: Map<String, Value>,
        read_ahead: &ReadAhead,
    ) -> Self {
        let normalized = crate::normalize(spec.input_schema(), arguments.clone(), spec.synonyms());
        let (mut args, warnings) = match normalized {
            Ok(n) => (Ok(n.args), n.warnings),
            Err(e) => (Err(without_unknown(&spec, e, arguments)), Vec::new()),
        };
        let mut idempotency_key = None;
        if spec.effect() == EffectClass::SilentWrite
            && let Ok(a) = &mut args
        {
            match gates::strip_idempotency_key(a) {
                Ok(key) => idempotency_key = key,
                Err(e) => args = Err(e),
            }
        }
        let empty = Map::new();
        let named = args.as_ref().unwrap_or(&empty);
        let digest = crate::digest(&Value::Object(named.clone()));
        let records = read_ahead.handles(named);
        CallPlan {
            spec,
            args,
            warnings,
            idempotency_key,
            digest,
            records,
        }
    }

    /// The loop brake's name for this exact call.
    pub(crate) fn brake_call(&self) -> String {
        store::concat(&[self.spec.name(), "#", &self.digest])
    }

    /// The replay record of this call for `tenant`'s `connection` (silent writes only).
    pub(crate) fn replay_key(&self, tenant: &TenantId, connection: &ConnectionId) -> Option<Key> {
        (self.spec.effect() == EffectClass::SilentWrite).then(|| {
            let fingerprint = gates::fingerprint(self.idempotency_key.as_deref(), &self.digest);
            crate::keys::replay(tenant, connection, self.spec.name(), &fingerprint)
        })
    }

    /// The keys of the records the arguments name, in `tenant`.
    pub(crate) fn record_keys<'a>(
        &'a self,
        tenant: &'a TenantId,
        read_ahead: &'a ReadAhead,
    ) -> impl Iterator<Item = Key> + 'a {
        self.records
            .iter()
            .filter_map(move |handle| read_ahead.key(tenant, handle))
    }

    /// Every item the call will read before its body: the loop brake, the replay record, the
    /// pending action a confirmation names, and the records the arguments (or the pending
    /// action's token) name. Invalid arguments read nothing but the brake.
    pub(crate) fn gate_keys(
        &self,
        tenant: &TenantId,
        connection: &ConnectionId,
        read_ahead: &ReadAhead,
    ) -> Vec<Key> {
        let mut keys = vec![crate::keys::brake(tenant, connection)];
        if self.args.is_err() {
            return keys;
        }
        keys.extend(self.replay_key(tenant, connection));
        if let Some(token) = self.confirm_token() {
            keys.push(crate::keys::pending(tenant, token));
            keys.extend(
                crate::confirm::token_handles(token)
                    .filter_map(|handle| read_ahead.key(tenant, handle)),
            );
        }
        keys.extend(self.record_keys(tenant, read_ahead));
        dedup(keys)
    }

    /// The pending action's token a confirmation or rejection names (when well formed).
    pub(crate) fn confirm_token(&self) -> Option<&str> {
        self.spec.builtin_step()?;
        let token = self.args.as_ref().ok()?.get("confirm_token")?.as_str()?;
        crate::confirm::well_formed(token).then_some(token)
    }
}

/// An unknown-argument error with the call to make instead: the same call without the
/// arguments the tool does not take. One unknown argument whose value fits exactly one
/// argument the call left out (a required one first) is moved there: `{"id": "cus_..."}`
/// to `get_customer` becomes `{"customer": "cus_..."}`. When the call still lacks a
/// required argument, the user is asked instead.
fn without_unknown(
    spec: &ToolSpec,
    error: ToolError,
    mut arguments: Map<String, Value>,
) -> ToolError {
    let Some(Value::Array(unknown)) = error.details.get("unknown") else {
        return error;
    };
    let unknown: Vec<String> = unknown
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let mut moved = Vec::new();
    for name in &unknown {
        let value = arguments.remove(name);
        if let (Some(value), [_]) = (value, unknown.as_slice())
            && let Some(target) = left_out_fitting(spec.input_schema(), &arguments, &value)
        {
            moved.push(format!("`{name}` as `{target}`"));
            arguments.insert(target, value);
        }
    }
    let missing = missing_required(spec.input_schema(), &arguments);
    if !missing.is_empty() {
        return error.handover(format!(
            "The call also needs {}; ask the user for what the conversation does not say",
            missing.join(", ")
        ));
    }
    let error = match moved.as_slice() {
        [] => error,
        _ => error.detail("moved", moved.join(", ")),
    };
    error.next_call(format!("{} {}", spec.name(), Value::Object(arguments)))
}

/// The one argument `value` could stand for: not sent, of the value's JSON type, a
/// required one if any is missing.
fn left_out_fitting(schema: &Value, sent: &Map<String, Value>, value: &Value) -> Option<String> {
    let props = schema.get("properties")?.as_object()?;
    let fits = |p: &Value| {
        let p = crate::resolve(schema, p);
        let types = match p.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => p
                .get("anyOf")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|o| crate::resolve(schema, o).get("type")?.as_str())
                .collect(),
        };
        match value {
            Value::String(_) => types.contains(&"string") && p.get("enum").is_none(),
            Value::Number(_) => types.contains(&"integer") || types.contains(&"number"),
            Value::Bool(_) => types.contains(&"boolean"),
            _ => false,
        }
    };
    let open: Vec<&String> = props
        .iter()
        .filter(|(name, p)| !sent.contains_key(*name) && *name != crate::IDEMPOTENCY_KEY && fits(p))
        .map(|(name, _)| name)
        .collect();
    let required = missing_required(schema, sent);
    let required_open: Vec<&&String> = open.iter().filter(|n| required.contains(n)).collect();
    match (required_open.as_slice(), open.as_slice()) {
        ([one], _) => Some((**one).clone()),
        ([], [one]) => Some((*one).clone()),
        _ => None,
    }
}

/// The required arguments `sent` lacks.
fn missing_required(schema: &Value, sent: &Map<String, Value>) -> Vec<String> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|r| !sent.contains_key(*r))
        .map(str::to_owned)
        .collect()
}

/// `keys` without repeats, in first-seen order (a batch read refuses a key asked twice).
fn dedup(keys: Vec<Key>) -> Vec<Key> {
    let mut out: Vec<Key> = Vec::with_capacity(keys.len());
    for key in keys {
        if !out.contains(&key) {
            out.push(key);
        }
    }
    out
}
