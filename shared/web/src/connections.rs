//! MCP connections: created (the token is shown once), listed, revoked.

use accounts::Session;
use http::StatusCode;

use crate::form::escape;
use crate::html::{csrf_field, html, redirect};
use crate::session::{actor, rights};
use crate::{Web, WebResponse};

pub(crate) async fn connections(web: &Web, s: &Session, created: Option<&str>) -> WebResponse {
    let list = web.connections.list(&s.tenant).await.unwrap_or_default();
    let mut rows = String::new();
    for c in &list {
        let action = if c.revoked {
            "revoked".to_owned()
        } else {
            format!(
                "<form method=\"post\" action=\"/app/connections/revoke\">{}<input type=\"hidden\" name=\"connection\" value=\"{}\"><button>Revoke</button></form>",
                csrf_field(s),
                escape(&c.id)
            )
        };
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.client_name),
            escape(&c.creator),
            escape(c.toolset.as_str()),
            if c.approval_pinned {
                "in the product"
            } else {
                "workspace modes"
            },
            escape(&c.rights.iter().cloned().collect::<Vec<_>>().join(", ")),
            escape(&c.created_at),
            escape(c.last_used.as_deref().unwrap_or("never")),
            action
        ));
    }
    let mut body = String::new();
    if let Some(token) = created {
        body.push_str(&format!("<div class=\"box\"><p>New connection. Copy the token now; it is not shown again:</p><pre>{}</pre></div>", escape(token)));
    }
    body.push_str(&format!(
        "<table><tr><th>Client</th><th>Created by</th><th>Toolset</th><th>Approval</th><th>Rights</th><th>Created</th><th>Last used (to the hour)</th><th></th></tr>{rows}</table>\
         <h2>New connection</h2><form method=\"post\" action=\"/app/connections\">{}<p><label>Client <input name=\"client\" required></label></p>\
         <p><label>Toolset <select name=\"toolset\"><option>core</option><option selected>standard</option><option>full</option></select></label></p>\
         <p><label>Approval <select name=\"approval\"><option value=\"client\" selected>the workspace's modes</option>\
         <option value=\"product\">always in the product (for clients that never ask you)</option></select></label></p>\
         <p><button>Create</button></p></form>",
        csrf_field(s)
    ));
    html(StatusCode::OK, "MCP connections", &body)
}

pub(crate) async fn create_connection(
    web: &Web,
    s: &Session,
    form: &std::collections::BTreeMap<String, String>,
) -> WebResponse {
    let toolset = form
        .get("toolset")
        .and_then(|t| mcp_pipeline::Toolset::parse(t))
        .unwrap_or(mcp_pipeline::Toolset::Standard);
    let new = identity::NewConnection {
        rights: rights(web, s).await,
        toolset,
        client_name: form.get("client").cloned().unwrap_or_default(),
        approval: form
            .get("approval")
            .and_then(|a| mcp_pipeline::ApprovalMode::parse(a))
            .unwrap_or_default(),
    };
    match web.connections.create_token(&actor(s), new).await {
        Ok((_, token)) => connections(web, s, Some(&token)).await,
        Err(e) => html(
            StatusCode::FORBIDDEN,
            "MCP connections",
            &format!("<p>{}</p>", escape(&e.to_string())),
        ),
    }
}

pub(crate) async fn revoke_connection(
    web: &Web,
    s: &Session,
    form: &std::collections::BTreeMap<String, String>,
) -> WebResponse {
    let id = form.get("connection").cloned().unwrap_or_default();
    match web.connections.revoke(&actor(s), &id).await {
        Ok(_) => redirect("/app/connections"),
        Err(e) => html(
            StatusCode::FORBIDDEN,
            "MCP connections",
            &format!("<p>{}</p>", escape(&e.to_string())),
        ),
    }
}
