//! Hints, written out and fitted to the caller: an error's "the same call, with this
//! changed" becomes the exact call, and a next call or next step that names a tool the
//! connection does not list (its toolset, or rights it lacks) becomes a handover to the
//! user, since it is no way on for that model.

use serde_json::{Map, Value, json};

use super::Call;
use crate::ToolResult;
use crate::{Choice, Unwritten};

impl Call<'_> {
    /// Writes out an error's calls given as changes to this call: `retry_with` as the
    /// `next_call`, each choice as an `options` entry with its exact call.
    pub(crate) fn write_out_calls(&self, result: &mut ToolResult) {
        let Some(unwritten) = result.unwritten.take() else {
            return;
        };
        let Unwritten {
            retry_with,
            options,
        } = *unwritten;
        let base = match &self.plan.args {
            Ok(args) => args.clone(),
            Err(_) => self.req_arguments(),
        };
        let call = |patch: &Map<String, Value>| {
            let mut args = base.clone();
            for (field, value) in patch {
                match value {
                    Value::Null => args.remove(field),
                    v => args.insert(field.clone(), v.clone()),
                };
            }
            format!("{} {}", self.plan.spec.name(), Value::Object(args))
        };
        let Value::Object(obj) = &mut result.structured else {
            return;
        };
        let mut headline = String::new();
        if let Some(patch) = retry_with {
            let next = call(&patch);
            headline.push_str(&format!(" Next call: {next}."));
            obj.insert("next_call".into(), next.into());
        }
        if !options.is_empty() {
            let written: Vec<Value> = options
                .iter()
                .map(|Choice { label, patch }| json!({"label": label, "call": call(patch)}))
                .collect();
            let listed: Vec<String> = options
                .iter()
                .map(|c| format!("{}: {}", c.label, call(&c.patch)))
                .collect();
            headline.push_str(&format!(" Options: {}.", listed.join("; ")));
            obj.insert("options".into(), Value::Array(written));
        }
        if let Some(text) = &mut result.error_headline {
            text.push_str(&headline);
        }
    }

    /// The arguments as the request sent them (for an error before they were normalized).
    fn req_arguments(&self) -> Map<String, Value> {
        match self.req.message.params.get("arguments") {
            Some(Value::Object(args)) => args.clone(),
            _ => Map::new(),
        }
    }

    /// Replaces a `next_call` to a tool hidden from the caller with a handover to the user,
    /// and drops next steps that start with such a tool.
    pub(crate) fn fit_hints(&self, result: &mut ToolResult) {
        let Some(caller) = self.caller() else {
            return;
        };
        let hidden = |hint: &str| {
            let tool = hint.split_whitespace().next().unwrap_or_default();
            self.server
                .registry()
                .get(tool)
                .is_some_and(|spec| self.server.hidden_from(spec, caller).is_some())
        };
        let Value::Object(obj) = &mut result.structured else {
            return;
        };
        if let Some(call) = obj
            .get("next_call")
            .and_then(Value::as_str)
            .map(str::to_owned)
            && hidden(&call)
        {
            let tool = call
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
            let handover = format!(
                "This connection cannot call {tool}: tell the user, who can do it in the product or with a connection that lists it."
            );
            obj.remove("next_call");
            obj.entry("handover")
                .or_insert_with(|| Value::String(handover.clone()));
            let fix = obj.get("fix").and_then(Value::as_str).unwrap_or_default();
            let fix = format!("{}. {handover}", fix.trim_end_matches('.'));
            obj.insert("fix".into(), Value::String(fix));
            if let Some(headline) = &mut result.error_headline {
                if let Some(at) = headline.find(" Next call: ") {
                    headline.truncate(at);
                }
                headline.push(' ');
                headline.push_str(&handover);
            }
        }
        if let Some(Value::Array(steps)) = obj.get_mut("next_steps") {
            steps.retain(|s| s.as_str().is_none_or(|s| !hidden(s)));
        }
    }
}
