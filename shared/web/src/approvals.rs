//! The approvals inbox and the approval page: what agents prepared and wait on a person for,
//! approved or rejected by a member with their own live rights, through the pipeline's
//! `Approvals` port. Times read in the workspace's zone; Approve shows only to a member who
//! holds the rights the action needs.

use std::collections::{BTreeMap, BTreeSet};

use accounts::Session;
use http::StatusCode;
use mcp_pipeline::PendingView;

use crate::form::escape;
use crate::html::{csrf_field, html};
use crate::session::rights;
use crate::{Web, WebResponse};

/// Who and what an action is read with: the workspace's zone, its connections, the member's
/// rights, the time.
struct Context {
    zone: String,
    asked_by: BTreeMap<String, String>,
    rights: BTreeSet<String>,
    now: chrono::DateTime<chrono::Utc>,
}

/// The workspace's time zone (UTC when it has none).
pub(crate) async fn workspace_zone(web: &Web, s: &Session) -> String {
    let actor = booking::Actor {
        tenant: s.tenant.clone(),
        member: s.member.clone(),
        rights: BTreeSet::new(),
    };
    booking::Tenants::new(web.store.clone())
        .get(&actor)
        .await
        .map_or_else(|_| "UTC".to_owned(), |t| t.zone)
}

impl Context {
    async fn of(web: &Web, s: &Session) -> Context {
        let zone = workspace_zone(web, s).await;
        let asked_by = web
            .connections
            .list(&s.tenant)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|c| (c.id, format!("{} (made by {})", c.client_name, c.creator)))
            .collect();
        Context {
            zone,
            asked_by,
            rights: rights(web, s).await,
            now: chrono::Utc::now(),
        }
    }

    fn asked_by(&self, p: &PendingView) -> String {
        self.asked_by
            .get(&p.connection)
            .cloned()
            .unwrap_or_else(|| format!("connection {}", p.connection))
    }

    fn expires(&self, p: &PendingView) -> String {
        p.expires_at
            .and_then(|t| chrono::DateTime::from_timestamp(t, 0))
            .map_or_else(
                || "when it is used".to_owned(),
                |t| booking::time::in_words(t, &self.zone, self.now),
            )
    }

    /// The rights the action needs that the member lacks.
    fn missing(&self, p: &PendingView) -> Vec<&'static str> {
        p.rights
            .iter()
            .copied()
            .filter(|r| !self.rights.contains(*r))
            .collect()
    }
}

/// `GET /app/approvals`: every action waiting for a person, soonest to expire first.
pub(crate) async fn inbox(web: &Web, s: &Session) -> WebResponse {
    let waiting = web.approvals.waiting(&s.tenant).await;
    let cx = Context::of(web, s).await;
    if waiting.is_empty() {
        return html(
            StatusCode::OK,
            "Approvals",
            "<p>Nothing is waiting for approval.</p>",
        );
    }
    let mut rows = String::new();
    for p in &waiting {
        let missing = cx.missing(p);
        let decision = if missing.is_empty() {
            format!(
                "<a href=\"/app/approvals/{}\">Review and decide</a>",
                escape(&p.token)
            )
        } else {
            format!(
                "<a href=\"/app/approvals/{}\">View</a> <span class=\"muted\">(needs {})</span>",
                escape(&p.token),
                escape(&missing.join(", "))
            )
        };
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&p.summary),
            escape(&cx.asked_by(p)),
            escape(&cx.expires(p)),
            decision
        ));
    }
    let body = format!(
        "<p>{} waiting, in {}.</p><div class=\"scroll\"><table><tr><th>What</th><th>Asked by</th><th>Expires</th><th></th></tr>{rows}</table></div>",
        waiting.len(),
        escape(&cx.zone)
    );
    html(StatusCode::OK, "Approvals", &body)
}

pub(crate) async fn approval(
    web: &Web,
    s: &Session,
    token: &str,
    outcome: Option<(&str, bool)>,
) -> WebResponse {
    let Some(p) = web.approvals.pending(&s.tenant, token).await else {
        return html(
            StatusCode::NOT_FOUND,
            "Approval",
            "<p>This approval link is unknown or has expired.</p>",
        );
    };
    let mut body = String::new();
    if let Some((message, ok)) = outcome {
        body.push_str(&format!(
            "<div class=\"box\"><strong>{}</strong> {}</div>",
            if ok { "Done." } else { "Not done." },
            escape(message)
        ));
    }
    let cx = Context::of(web, s).await;
    body.push_str(&format!(
        "<div class=\"box\"><p><strong>{}</strong></p><dl><dt>Asked by</dt><dd>{}</dd><dt>Expires</dt><dd>{}</dd><dt>Status</dt><dd>{}</dd><dt>Tool</dt><dd><code>{}</code></dd></dl></div>",
        escape(&p.summary),
        escape(&cx.asked_by(&p)),
        escape(&cx.expires(&p)),
        escape(&p.status),
        escape(&p.tool),
    ));
    body.push_str(&details(&p.content));
    if let Some(message) = p.content["body"]["untrusted_text"].as_str() {
        // The exact message that would go out (it quotes what customers wrote: escaped).
        body.push_str(&format!(
            "<div class=\"box\"><p class=\"muted\">The message to {}:</p><pre>{}</pre></div>",
            escape(p.content["to"].as_str().unwrap_or("the customer")),
            escape(message)
        ));
    }
    let missing = cx.missing(&p);
    if p.status == "pending" && missing.is_empty() {
        body.push_str(&format!(
            "<form method=\"post\">{c}<button name=\"decision\" value=\"approve\">Approve</button><button name=\"decision\" value=\"reject\">Reject</button></form>",
            c = csrf_field(s)
        ));
    } else if p.status == "pending" {
        body.push_str(&format!(
            "<p class=\"muted\">Deciding needs {}, which you do not have; a member who has it can.</p>",
            escape(&missing.join(", "))
        ));
    }
    html(StatusCode::OK, "Approve an agent's action", &body)
}

/// What the action carries besides its message: the quote's lines and totals, the recipient,
/// anything else the preview named, as label and value.
fn details(content: &serde_json::Value) -> String {
    let Some(fields) = content.as_object() else {
        return String::new();
    };
    let mut rows = String::new();
    for (name, value) in fields {
        if name == "body" {
            continue;
        }
        let shown = match value {
            serde_json::Value::String(text) => text.clone(),
            // A list of plain lines (a quote's lines): one per line.
            serde_json::Value::Array(items) if items.iter().all(serde_json::Value::is_string) => {
                items
                    .iter()
                    .filter_map(serde_json::Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n")
            }
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        rows.push_str(&format!(
            "<dt>{}</dt><dd><pre>{}</pre></dd>",
            escape(&name.replace('_', " ")),
            escape(&shown)
        ));
    }
    if rows.is_empty() {
        return String::new();
    }
    format!("<div class=\"box\"><p class=\"muted\">What would be done:</p><dl>{rows}</dl></div>")
}

pub(crate) async fn decide(
    web: &Web,
    s: &Session,
    token: &str,
    form: &std::collections::BTreeMap<String, String>,
) -> WebResponse {
    let Some(p) = web.approvals.pending(&s.tenant, token).await else {
        return html(
            StatusCode::NOT_FOUND,
            "Approval",
            "<p>This approval link is unknown or has expired.</p>",
        );
    };
    // The approving member acts with their own live rights, for the connection that asked.
    let caller = mcp_pipeline::Caller {
        tenant: s.tenant.clone(),
        connection: p.connection.clone(),
        creator: s.member.clone(),
        client_name: "product page".into(),
        rights: rights(web, s).await,
        toolset: mcp_pipeline::Toolset::Full,
        // The page is the product: the approver is the person the product mode asks for.
        product_approval: mcp_pipeline::ProductApproval::NONE,
    };
    let result = match form.get("decision").map(String::as_str) {
        Some("approve") => web.approvals.approve(token, caller, &s.member).await,
        Some("reject") => web.approvals.reject(token, caller).await,
        _ => {
            return html(
                StatusCode::BAD_REQUEST,
                "Approval",
                "<p>Choose Approve or Reject.</p>",
            );
        }
    };
    let message = result
        .structured
        .get("message")
        .or_else(|| result.structured.get("summary"))
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned();
    let status = if result.is_error() {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::OK
    };
    let mut r = approval(web, s, token, Some((&message, !result.is_error()))).await;
    *r.status_mut() = status;
    r
}
