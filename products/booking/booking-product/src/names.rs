//! The product's answer to names where handles belong (the pipeline's [`NameResolver`]):
//! customers and technicians have names; a customer is told apart by email, a technician by
//! zone and skills.

use booking::Actor;
use mcp_pipeline::{BoxFuture, CallError, Caller, NameResolver, Named, ToolError};

use crate::Services;

/// Finds customers and technicians by their exact name.
#[derive(Debug, Clone)]
pub struct NameLookup {
    services: Services,
}

impl NameLookup {
    /// The lookup over the product's services.
    pub fn new(services: Services) -> Self {
        NameLookup { services }
    }

    async fn lookup(
        &self,
        caller: &Caller,
        noun: &str,
        name: &str,
    ) -> Result<Option<Vec<Named>>, ToolError> {
        let actor = Actor {
            tenant: caller.tenant.clone(),
            member: caller.creator.clone(),
            rights: caller.rights.clone(),
        };
        let wanted = name.trim().to_lowercase();
        let same = |other: &str| other.trim().to_lowercase() == wanted;
        let found = match noun {
            "customer" => {
                // Every customer of that exact name, not the first few matches of a search: a
                // cut-off list could hold one of two namesakes and pick it.
                let named = self
                    .services
                    .customers
                    .named(&actor, name)
                    .await
                    .map_err(tool_error)?;
                named
                    .iter()
                    .map(|c| Named {
                        handle: c.handle(),
                        label: c.email.clone(),
                    })
                    .collect()
            }
            "technician" => {
                let all = self
                    .services
                    .technicians
                    .list(&actor)
                    .await
                    .map_err(tool_error)?;
                all.iter()
                    .filter(|t| same(&t.name))
                    .map(|t| Named {
                        handle: t.handle(),
                        label: format!("{} ({}; {})", t.name, t.zone, t.skills.join(", ")),
                    })
                    .collect()
            }
            _ => return Ok(None),
        };
        Ok(Some(found))
    }
}

fn tool_error(e: booking::BookingError) -> ToolError {
    match crate::adapter::error(e) {
        CallError::Tool(error) => error,
        _ => ToolError::new(
            mcp_pipeline::ErrorKind::Internal,
            "Names could not be looked up",
            "Send the record's handle instead",
        )
        .detail("retry_after_seconds", 5),
    }
}

impl NameResolver for NameLookup {
    fn exactly_named<'a>(
        &'a self,
        caller: &'a Caller,
        noun: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<Named>>, ToolError>> {
        Box::pin(self.lookup(caller, noun, name))
    }

    fn search_call(&self, noun: &str, name: &str) -> Option<String> {
        match noun {
            "customer" if !name.trim().is_empty() => Some(format!(
                "find_customers {}",
                serde_json::json!({"query": name.trim()})
            )),
            "customer" => Some("find_customers {}".to_owned()),
            "technician" => Some("list_technicians {}".to_owned()),
            // Bookings and quotes have no names: the lists show the most recent first.
            "booking" => Some("find_bookings {}".to_owned()),
            "quote" => Some("find_quotes {}".to_owned()),
            _ => None,
        }
    }

    fn read_call(&self, noun: &str, handle: &str) -> Option<String> {
        matches!(noun, "customer" | "booking" | "quote")
            .then(|| format!("get_{noun} {}", serde_json::json!({ noun: handle })))
    }
}
