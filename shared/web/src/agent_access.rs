//! Agent access: a workspace admin turns agents off or on, and chooses where each class of
//! prepared action is approved (ADR 15); both audited.

use accounts::Session;
use http::StatusCode;

use maud::Markup;

use crate::html::{csrf_field, html, message};
use crate::session::{actor, rights};
use crate::{Web, WebResponse};

pub(crate) async fn agent_access_page(web: &Web, s: &Session, notice: Option<&str>) -> WebResponse {
    let on = web
        .store
        .get(&identity::keys::tenant_switch(&s.tenant))
        .await
        .ok()
        .flatten();
    let enabled = identity::switch::tenant_allows(on.as_ref());
    let modes = identity::switch::approval_modes(on.as_ref());
    let may_manage = rights(web, s)
        .await
        .contains(identity::switch::MANAGE_AGENT_ACCESS);
    let body = maud::html! {
        @if let Some(notice) = notice { div.box { (notice) } }
        p { "Agent access for " strong { (s.tenant) } " is " strong { (if enabled { "on" } else { "off" }) } "." }
        @if may_manage {
            form method="post" {
                (csrf_field(s))
                input type="hidden" name="state" value=(if enabled { "off" } else { "on" });
                button { (if enabled { "Turn agent access off" } else { "Turn agent access on" }) }
            }
        } @else {
            p.muted { "Changing it needs the agent_access:manage right." }
        }
        (approval_modes_table(s, modes, may_manage))
    };
    html(StatusCode::OK, "Agent access", body)
}

/// Where each class of prepared action is approved, with a form to change each for members
/// who may (ADR 15).
fn approval_modes_table(
    s: &Session,
    modes: mcp_pipeline::ProductApproval,
    may_manage: bool,
) -> Markup {
    maud::html! {
        h2 { "Approvals" }
        p.muted {
            "In the client, the person's client asks them before a prepared action runs (clients that \
             prompt per call, or ask through elicitation). In the product only, the agent gets a link and a \
             member with the right approves here. Quotes are always approved in the product."
        }
        div.scroll { table {
            tr { th { "Actions" } th { "Approved" } th {} }
            @for class in mcp_pipeline::APPROVAL_CLASSES {
                @let name = mcp_pipeline::class_name(class);
                @let (now, other, button) = match modes.mode(class) {
                    mcp_pipeline::ApprovalMode::Client => ("in the client", "product", "Approve in the product only"),
                    mcp_pipeline::ApprovalMode::Product => ("in the product only", "client", "Let clients approve"),
                };
                tr {
                    td { (name) }
                    td { (now) }
                    td {
                        @if may_manage {
                            form method="post" action="/app/agent-access/approval" {
                                (csrf_field(s))
                                input type="hidden" name="class" value=(name);
                                input type="hidden" name="mode" value=(other);
                                button { (button) }
                            }
                        }
                    }
                }
            }
        } }
    }
}

/// The refusal for a member without `agent_access:manage`, who may not change `what`.
async fn needs_agent_access_manage(web: &Web, s: &Session, what: &str) -> Option<WebResponse> {
    let allowed = rights(web, s)
        .await
        .contains(identity::switch::MANAGE_AGENT_ACCESS);
    (!allowed).then(|| {
        message(
            StatusCode::FORBIDDEN,
            "Agent access",
            &format!("Changing {what} needs the agent_access:manage right."),
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
        return message(
            StatusCode::BAD_REQUEST,
            "Agent access",
            "Choose one of notify, wake, alerting or delete, and client or product.",
        );
    };
    match web.switches.set_approval_mode(&actor(s), class, mode).await {
        Ok(()) => {
            let notice = format!(
                "{} actions are now approved {}.",
                mcp_pipeline::class_name(class),
                match mode {
                    mcp_pipeline::ApprovalMode::Client => "in the client",
                    mcp_pipeline::ApprovalMode::Product => "in the product only",
                }
            );
            agent_access_page(web, s, Some(&notice)).await
        }
        Err(e) => message(
            StatusCode::SERVICE_UNAVAILABLE,
            "Agent access",
            &e.to_string(),
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
    let on = match form.get("state").map(String::as_str) {
        Some("on") => true,
        Some("off") => false,
        _ => return message(StatusCode::BAD_REQUEST, "Agent access", "Choose on or off."),
    };
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
        Err(e) => message(
            StatusCode::SERVICE_UNAVAILABLE,
            "Agent access",
            &e.to_string(),
        ),
    }
}
