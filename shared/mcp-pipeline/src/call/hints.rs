//! Hints name only tools the caller can call: a next call or next step that names a tool the
//! connection does not list (its toolset, or rights it lacks) is no way on for that model.

use serde_json::Value;

use super::Call;
use crate::ToolResult;

impl Call<'_> {
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
