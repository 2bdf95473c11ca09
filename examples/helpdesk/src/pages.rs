//! The helpdesk's records and JSON API (ADR 49). A ticket's page shows its typed attributes,
//! what the customer wrote marked as written outside the workspace. The API lists tickets,
//! closes one and deletes one; each route names the tool whose work it does, and the platform
//! admits it with that tool's effect class (a deletion counts in the delete bucket).

use gatehouse_server::{store, web};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use gatehouse_tool::records::{
    Attribute, AttributeType as T, AttributeValue as V, Reader, Record, RecordError, RecordKind,
    Records,
};
use serde_json::{Value, json};
use store::Store;
use web::api::{answer, no_such_route};
use web::{ApiCall, ApiRoute, ProductApi, WebResponse};

use crate::rights;
use crate::tickets::{self, HelpdeskError, Ticket, TicketId, Tickets};

/// Tickets, as their pages show them.
pub const TICKET: RecordKind = RecordKind {
    prefix: tickets::PREFIX,
    noun: "ticket",
    path: "tickets",
    attributes: &[
        Attribute::new("subject", "Subject", T::String).third_party(),
        Attribute::new("customer", "Customer", T::String),
        Attribute::new("status", "Status", T::String),
        Attribute::new("muted", "Alerts muted", T::String),
        Attribute::new("version", "Version", T::Integer),
        Attribute::new("body", "What the customer wrote", T::String).third_party(),
    ],
};

/// The helpdesk's records.
#[derive(Debug, Clone)]
pub struct TicketRecords(pub Tickets);

impl Records for TicketRecords {
    fn kinds(&self) -> &'static [RecordKind] {
        std::slice::from_ref(&TICKET)
    }

    fn read<'a>(
        &'a self,
        reader: &'a Reader,
        _kind: &'static RecordKind,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Record, RecordError>> {
        Box::pin(async move {
            if !reader.rights.contains(rights::TICKETS_READ) {
                return Err(RecordError::Forbidden {
                    right: rights::TICKETS_READ.into(),
                });
            }
            match self.0.get(&reader.tenant, &TicketId::new(id)).await {
                Ok(t) => Ok(record(&t)),
                Err(HelpdeskError::Store(_)) => Err(RecordError::Unavailable),
                Err(_) => Err(RecordError::NotFound),
            }
        })
    }
}

fn record(t: &Ticket) -> Record {
    Record::default()
        .with("subject", t.subject.as_str())
        .with("customer", t.customer.as_str())
        .with("status", if t.open { "open" } else { "closed" })
        .with("muted", if t.muted { "yes" } else { "no" })
        .with("version", V::Integer(t.version))
        .with("body", t.body.as_str())
}

/// The helpdesk's API routes.
const ROUTES: &[ApiRoute] = &[
    ApiRoute {
        method: "GET",
        path: &["tickets"],
        tool: "find_tickets",
    },
    ApiRoute {
        method: "POST",
        path: &["tickets", "{handle}", "close"],
        tool: "close_ticket",
    },
    ApiRoute {
        method: "DELETE",
        path: &["tickets", "{handle}"],
        tool: "delete_ticket",
    },
];

/// The helpdesk's JSON API.
#[derive(Debug, Clone)]
pub struct TicketApi {
    /// The store the API's changes are committed to.
    pub store: Arc<dyn Store>,
    /// The tickets.
    pub tickets: Tickets,
}

impl ProductApi for TicketApi {
    fn routes(&self) -> &'static [ApiRoute] {
        ROUTES
    }

    fn handle<'a>(&'a self, call: ApiCall<'a>) -> BoxFuture<'a, WebResponse> {
        Box::pin(async move {
            let rights = &call.caller.rights;
            let needed = match call.tool {
                "find_tickets" => rights::TICKETS_READ,
                "close_ticket" => rights::TICKETS_WRITE,
                _ => rights::TICKETS_DELETE,
            };
            if !rights.contains(needed) {
                let body = json!({"error": "forbidden", "right": needed});
                return answer(http::StatusCode::FORBIDDEN, &body);
            }
            let answered = match call.tool {
                "find_tickets" => self.list(&call).await,
                "close_ticket" | "delete_ticket" => self.change(&call).await,
                _ => return no_such_route(),
            };
            answered.unwrap_or_else(|e| e)
        })
    }
}

impl TicketApi {
    async fn list(&self, call: &ApiCall<'_>) -> Result<WebResponse, WebResponse> {
        let found = self
            .tickets
            .list(&call.caller.tenant, true, 50)
            .await
            .map_err(error)?;
        let shown: Vec<Value> = found.iter().map(view).collect();
        Ok(answer(http::StatusCode::OK, &json!({ "tickets": shown })))
    }

    /// Closes or deletes the ticket the path names, at the version the body names.
    async fn change(&self, call: &ApiCall<'_>) -> Result<WebResponse, WebResponse> {
        let tenant = &call.caller.tenant;
        let handle = call.route.get(1).copied().unwrap_or_default();
        let id = TICKET
            .id_of(handle)
            .map(TicketId::new)
            .ok_or_else(|| error(HelpdeskError::NotFound(handle.into())))?;
        let body: Value = serde_json::from_slice(call.body).unwrap_or(Value::Null);
        let Some(version) = body.get("version").and_then(Value::as_i64) else {
            let reason = json!({"error": "validation", "field": "version", "reason": "is required: the version read last"});
            return Err(answer(http::StatusCode::BAD_REQUEST, &reason));
        };
        let mut ticket = if call.tool == "close_ticket" {
            self.tickets.open_at(tenant, &id, version).await
        } else {
            self.tickets.get(tenant, &id).await
        }
        .map_err(error)?;
        if ticket.version != version {
            return Err(error(HelpdeskError::Stale {
                handle: ticket.handle(),
                sent: version,
                current: ticket.version,
            }));
        }
        let mut ops = if call.tool == "close_ticket" {
            tickets::close(tenant, &ticket).to_vec()
        } else {
            tickets::delete(tenant, &ticket)
        };
        ops.push(call.audit(vec![ticket.handle()]));
        self.store
            .transact_write(ops)
            .await
            .map_err(|e| error(HelpdeskError::Store(e)))?;
        ticket.open = false;
        ticket.version += 1;
        Ok(answer(http::StatusCode::OK, &view(&ticket)))
    }
}

fn view(t: &Ticket) -> Value {
    json!({"ticket": t.handle(), "subject": t.subject, "customer": t.customer, "open": t.open, "version": t.version})
}

fn error(e: HelpdeskError) -> WebResponse {
    let (status, kind) = match &e {
        HelpdeskError::NotFound(_) => (http::StatusCode::NOT_FOUND, "not_found"),
        HelpdeskError::Closed(_) => (http::StatusCode::UNPROCESSABLE_ENTITY, "rejected"),
        // A write that lost to another since the read is stale too.
        HelpdeskError::Stale { .. }
        | HelpdeskError::Store(store::StoreError::TransactionCancelled { .. }) => {
            (http::StatusCode::CONFLICT, "conflict")
        }
        HelpdeskError::Store(_) => (http::StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
    };
    answer(status, &json!({"error": kind, "reason": e.to_string()}))
}
