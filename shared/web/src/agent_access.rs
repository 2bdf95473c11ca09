//! Agent access: a workspace admin turns agents off or on, and chooses where each class of
//! prepared action is approved (ADR 15); both audited.

use accounts::Session;
use http::StatusCode;

use crate::form::escape;
use crate::html::{csrf_field, html};
use crate::session::{actor, rights};
use crate::{Web, WebResponse};

pub(crate) async fn agent_access_page(
    web: &Web,
    s: &Session,
    message: Option<&str>,
) -> WebResponse {
    let on = web
        .store
        .get(&identity::keys::tenant_switch(&s.tenant))
        .await
        .ok()
        .flatten();
    let enabled = identity::switch::tenant_allows(on.as_ref());
    let modes = identity::switch::approval_modes(on.as_ref());
    let mut body = format!(
        "{}<p>Agent access for <strong>{}</strong> is <strong>{}</strong>.</p><form method=\"post\">{}<input type=\"hidden\" name=\"state\" value=\"{}\"><button>{}</button></form>",
        message
            .map(|m| format!("<div class=\"box\">{}</div>", escape(m)))
            .unwrap_or_default(),
        escape(&s.tenant),
        if enabled { "on" } else { "off" },
        csrf_field(s),
        if enabled { "off" } else { "on" },
        if enabled {
            "Turn agent access off"
        } else {
            "Turn agent access on"
        }
    );
    body.push_str(&approval_modes_form(s, modes));
    html(StatusCode::OK, "Agent access", &body)
}

/// Where each class of prepared action is approved, with a form to change each (ADR 15).
fn approval_modes_form(s: &Session, modes: mcp_pipeline::ProductApproval) -> String {
    let mut rows = String::new();
    for class in mcp_pipeline::APPROVAL_CLASSES {
        let name = mcp_pipeline::class_name(class);
        let (now, other, button) = match modes.mode(class) {
            mcp_pipeline::ApprovalMode::Client => {
                ("in the client", "product", "Approve in the product only")
            }
            mcp_pipeline::ApprovalMode::Product => {
                ("in the product only", "client", "Let clients approve")
            }
        };
        rows.push_str(&format!(
            "<tr><td>{name}</td><td>{now}</td><td><form method=\"post\" action=\"/app/agent-access/approval\">{}\
             <input type=\"hidden\" name=\"class\" value=\"{name}\"><input type=\"hidden\" name=\"mode\" value=\"{other}\">\
             <button>{button}</button></form></td></tr>",
            csrf_field(s)
        ));
    }
    format!(
        "<h2>Approvals</h2><p class=\"muted\">In the client, the person's client asks them before a prepared action runs (clients that \
         prompt per call, or ask through elicitation). In the product only, the agent gets a link and a member with the right approves \
         here. Quotes are always approved in the product.</p><table><tr><th>Actions</th><th>Approved</th><th></th></tr>{rows}</table>"
    )
}

/// The refusal for a member without `agent_access:manage`, who may not change `what`.
async fn needs_agent_access_manage(web: &Web, s: &Session, what: &str) -> Option<WebResponse> {
    let allowed = rights(web, s)
        .await
        .contains(booking::rights::AGENT_ACCESS_MANAGE);
    (!allowed).then(|| {
        html(
            StatusCode::FORBIDDEN,
            "Agent access",
            &format!("<p>Changing {what} needs the agent_access:manage right.</p>"),
        )
    })
}

pub(crate) async fn set_approval_mode(
    web: &Web,
    s: &Session,
    form: &std::collections::BTreeMap<String, String>,
) -> WebResponse {
    if let Some(refused) = needs_agent_access_manage(web, s, "approval modes").await {
        return refused;
    }
    let class = form
        .get("class")
        .and_then(|c| mcp_pipeline::approval_class(c));
    let mode = form
        .get("mode")
        .and_then(|m| mcp_pipeline::ApprovalMode::parse(m));
    let (Some(class), Some(mode)) = (class, mode) else {
        return html(
            StatusCode::BAD_REQUEST,
            "Agent access",
            "<p>Choose one of notify, wake, alerting or delete, and client or product.</p>",
        );
    };
    match web.switches.set_approval_mode(&actor(s), class, mode).await {
        Ok(()) => {
            let message = format!(
                "{} actions are now approved {}.",
                mcp_pipeline::class_name(class),
                match mode {
                    mcp_pipeline::ApprovalMode::Client => "in the client",
                    mcp_pipeline::ApprovalMode::Product => "in the product only",
                }
            );
            agent_access_page(web, s, Some(&message)).await
        }
        Err(e) => html(
            StatusCode::SERVICE_UNAVAILABLE,
            "Agent access",
            &format!("<p>{}</p>", escape(&e.to_string())),
        ),
    }
}

pub(crate) async fn set_agent_access(
    web: &Web,
    s: &Session,
    form: &std::collections::BTreeMap<String, String>,
) -> WebResponse {
    if let Some(refused) = needs_agent_access_manage(web, s, "agent access").await {
        return refused;
    }
    let on = form.get("state").map(String::as_str) == Some("on");
    match web.switches.set_agent_access(&actor(s), on).await {
        Ok(()) => {
            agent_access_page(
                web,
                s,
                Some(if on {
                    "Agent access is on."
                } else {
                    "Agent access is off: agents' next calls are refused."
                }),
            )
            .await
        }
        Err(e) => html(
            StatusCode::SERVICE_UNAVAILABLE,
            "Agent access",
            &format!("<p>{}</p>", escape(&e.to_string())),
        ),
    }
}
