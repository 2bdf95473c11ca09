//! The approvals inbox and the approval page: what agents prepared and wait on a person for,
//! approved or rejected by a member with their own live rights, through the pipeline's
//! `Approvals` port. Times read in the workspace's zone; Approve shows only to a member who
//! holds the rights the action needs.

use std::collections::{BTreeMap, BTreeSet};

use accounts::Session;
use http::StatusCode;
use mcp_pipeline::PendingView;

use maud::Markup;

use crate::html::{csrf_field, html, message};
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
    accounts::workspaces::zone(web.store.as_ref(), &s.tenant).await
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
            .map(|c| {
                (
                    c.id.into_string(),
                    format!("{} (made by {})", c.client_name, c.creator),
                )
            })
            .collect();
        Context {
            zone,
            asked_by,
            rights: rights(web, s).await,
            now: web.now(),
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
                |t| outside::when::in_words(t, &self.zone, self.now),
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
        return message(
            StatusCode::OK,
            "Approvals",
            "Nothing is waiting for approval.",
        );
    }
    let body = maud::html! {
        p { (waiting.len()) " waiting, in " (cx.zone) "." }
        div.scroll { table.stack {
            tr { th { "What" } th { "Asked by" } th { "Waiting for" } th { "Expires" } th {} }
            @for p in &waiting {
                @let missing = cx.missing(p);
                tr {
                    td { (for_people(&p.summary)) }
                    td { (cx.asked_by(p)) }
                    td { (needs(p, &missing)) }
                    td { (cx.expires(p)) }
                    td {
                        @if missing.is_empty() {
                            a href={ "/app/approvals/" (p.token) } { "Review and decide" }
                        } @else {
                            a href={ "/app/approvals/" (p.token) } { "View" }
                            " " span.muted { "(needs " (missing.join(", ")) ")" }
                        }
                    }
                }
            }
        } }
    };
    html(StatusCode::OK, "Approvals", body)
}

/// The rights a decision takes, each one the reader lacks marked.
fn needs(p: &PendingView, missing: &[&str]) -> maud::Markup {
    maud::html! {
        "someone with "
        @for (i, right) in p.rights.iter().enumerate() {
            @if i > 0 { " and " }
            code { (right) }
            @if missing.contains(right) { " (you lack it)" }
        }
    }
}

fn unknown() -> WebResponse {
    message(
        StatusCode::NOT_FOUND,
        "Approval",
        "This approval link is unknown or has expired.",
    )
}

pub(crate) async fn approval(
    web: &Web,
    s: &Session,
    token: &str,
    outcome: Option<(&str, bool)>,
) -> WebResponse {
    let Some(p) = web.approvals.pending(&s.tenant, token).await else {
        return unknown();
    };
    let cx = Context::of(web, s).await;
    let missing = cx.missing(&p);
    let body = maud::html! {
        @if let Some((said, ok)) = outcome {
            div.box { strong { (if ok { "Done." } else { "Not done." }) } " " (said) }
        }
        div.box {
            p { strong { (for_people(&p.summary)) } }
            dl {
                dt { "Asked by" } dd { (cx.asked_by(&p)) }
                dt { "Waiting for" } dd { (needs(&p, &missing)) }
                @if p.status == "pending" { dt { "Expires" } dd { (cx.expires(&p)) } }
                dt { "Status" } dd { (p.status) }
                dt { "Tool" } dd { code { (p.tool) } }
            }
        }
        (details(&p.content))
        @if let Some(text) = p.content["body"]["untrusted_text"].as_str() {
            // The exact message that would go out (it quotes what customers wrote).
            div.box {
                p.muted { "The message to " (p.content["to"].as_str().unwrap_or("the customer")) ":" }
                pre { (text) }
            }
        }
        @if p.status == "pending" && missing.is_empty() {
            form method="post" {
                (csrf_field(s))
                button name="decision" value="approve" { "Approve" }
                button name="decision" value="reject" { "Reject" }
            }
        } @else if p.status == "pending" {
            p.muted { "Deciding needs " (missing.join(", ")) ", which you do not have; a member who has it can." }
        }
    };
    html(StatusCode::OK, "Approve an agent's action", body)
}

/// A summary as a person reads it: without the pointer to `preview.body` that tells a model
/// where the exact message is (the page shows the message below).
fn for_people(summary: &str) -> &str {
    summary.strip_suffix(" (preview.body)").unwrap_or(summary)
}

/// A value of a preview's content as text: text as it is (untrusted text unwrapped: the page
/// escapes it), a quote line as `2 × Filter at 19.99 = 39.98`, a list one item per line, other
/// structures as JSON.
fn shown(value: &serde_json::Value) -> String {
    use serde_json::Value;
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Object(o) if o.contains_key("untrusted_text") => {
            o["untrusted_text"].as_str().unwrap_or_default().to_owned()
        }
        other => other.to_string(),
    };
    match value {
        Value::String(s) => s.clone(),
        Value::Object(o) if o.contains_key("untrusted_text") => text(value),
        Value::Object(o) if o.contains_key("description") && o.contains_key("quantity") => format!(
            "{} × {} at {} = {}",
            text(&o["quantity"]),
            text(&o["description"]),
            text(&o["unit_price"]),
            text(&o["total"])
        ),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join("\n"),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// What the action carries besides its message: the quote's lines and totals, the recipient,
/// anything else the preview named, as label and value.
fn details(content: &serde_json::Value) -> Markup {
    let fields: Vec<(&String, &serde_json::Value)> = content
        .as_object()
        .map(|m| m.iter().filter(|(name, _)| *name != "body").collect())
        .unwrap_or_default();
    maud::html! {
        @if !fields.is_empty() {
            div.box {
                p.muted { "What would be done:" }
                dl {
                    @for (name, value) in &fields {
                        dt { (name.replace('_', " ")) }
                        dd { pre { (shown(value)) } }
                    }
                }
            }
        }
    }
}

pub(crate) async fn decide(
    web: &Web,
    s: &Session,
    token: &str,
    form: &std::collections::BTreeMap<String, String>,
) -> WebResponse {
    let Some(p) = web.approvals.pending(&s.tenant, token).await else {
        return unknown();
    };
    // The approving member acts with their own live rights, for the connection that asked.
    let caller = mcp_pipeline::Caller {
        tenant: s.tenant.clone(),
        connection: mcp_pipeline::ConnectionId::new(p.connection.clone()),
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
            return message(
                StatusCode::BAD_REQUEST,
                "Approval",
                "Choose Approve or Reject.",
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
        refusal_status(&result.structured)
    } else {
        StatusCode::OK
    };
    let mut r = approval(web, s, token, Some((&message, !result.is_error()))).await;
    *r.status_mut() = status;
    r
}

/// The status a refused decision answers with, from the refusal's code: a decision the
/// member may not make is 403, one the action's state rules out (already decided, changed
/// since it was prepared) 409, as the JSON API answers them.
fn refusal_status(refusal: &serde_json::Value) -> StatusCode {
    match refusal.get("code").and_then(|c| c.as_str()) {
        Some("validation") => StatusCode::BAD_REQUEST,
        Some("forbidden") => StatusCode::FORBIDDEN,
        Some("not_found") => StatusCode::NOT_FOUND,
        Some("conflict") => StatusCode::CONFLICT,
        Some("rate_limited") => StatusCode::TOO_MANY_REQUESTS,
        Some("rejected") => StatusCode::UNPROCESSABLE_ENTITY,
        Some("unavailable") => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_read_summaries_without_the_models_pointer() {
        let summary =
            "Cancel booking bkg_1 and email ada@example.com the cancellation notice (preview.body)";
        assert_eq!(
            for_people(summary),
            "Cancel booking bkg_1 and email ada@example.com the cancellation notice"
        );
        assert_eq!(for_people("Send quote quo_1"), "Send quote quo_1");
    }
}
