//! The stage that reads names where handles belong ([`crate::names`]).

use std::sync::Arc;

use serde_json::Value;

use super::{Call, CallPlan, Stage};

impl Call<'_> {
    /// 2a. Names: an argument that takes a handle but holds a name is resolved through the
    ///     product, to the one record of exactly that name; the call then goes on as if the
    ///     handle had been sent (its replay digest covers the handle), with a warning saying
    ///     so. Several or no records of that name end the call with the candidates or the
    ///     search to run.
    pub(crate) async fn resolve_names(&mut self) -> Stage<()> {
        let (Some(resolver), Some(caller)) = (self.server.config().names.clone(), self.caller())
        else {
            return Ok(());
        };
        let Ok(args) = &self.plan.args else {
            return Ok(());
        };
        let mut args = args.clone();
        let mut coerced = Vec::new();
        for (field, noun) in self.plan.spec.handle_fields() {
            let Some(name) = args.get(field).and_then(Value::as_str).map(str::to_owned) else {
                continue;
            };
            if crate::looks_like_handle(&name) {
                continue;
            }
            let Some(found) = resolver.exactly_named(caller, noun, name.trim()).await? else {
                continue;
            };
            let (handle, warning) =
                crate::resolved(resolver.as_ref(), field, noun, name.trim(), found)?;
            args.insert(field.clone(), Value::String(handle));
            coerced.push(warning);
        }
        if coerced.is_empty() {
            return Ok(());
        }
        let read_ahead = &self.server.config().read_ahead;
        let mut plan = CallPlan::new(Arc::clone(&self.plan.spec), args, read_ahead);
        plan.warnings
            .splice(0..0, self.plan.warnings.iter().cloned());
        plan.warnings.extend(coerced);
        if let Some(key) = &self.plan.idempotency_key {
            plan.idempotency_key = Some(key.clone());
        }
        self.plan = Arc::new(plan);
        Ok(())
    }
}
