//! The approval page: a pending action of an agent, approved or rejected by a member with
//! their own live rights, through the pipeline's `Approvals` port.

use accounts::Session;
use http::StatusCode;

use crate::form::escape;
use crate::html::{csrf_field, html};
use crate::session::rights;
use crate::{Web, WebResponse};

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
    body.push_str(&format!(
        "<div class=\"box\"><p>{}</p><p class=\"muted\">Tool <code>{}</code> · asked by connection <code>{}</code> · status <strong>{}</strong></p></div>",
        escape(&p.summary),
        escape(&p.tool),
        escape(&p.connection),
        escape(&p.status)
    ));
    if let Some(message) = p.content["body"]["untrusted_text"].as_str() {
        // The exact message that would go out (it quotes what customers wrote: escaped).
        body.push_str(&format!(
            "<div class=\"box\"><p class=\"muted\">The message to {}:</p><pre>{}</pre></div>",
            escape(p.content["to"].as_str().unwrap_or("the customer")),
            escape(message)
        ));
    }
    if p.status == "pending" {
        body.push_str(&format!(
            "<form method=\"post\">{c}<button name=\"decision\" value=\"approve\">Approve</button><button name=\"decision\" value=\"reject\">Reject</button></form>",
            c = csrf_field(s)
        ));
    }
    html(StatusCode::OK, "Approve an agent's action", &body)
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
