//! MCP connections: created (the token is shown once), listed, revoked.

use accounts::Session;
use http::StatusCode;

use crate::form::escape;
use crate::html::{csrf_field, html, redirect};
use crate::session::{actor, rights};
use crate::{Web, WebResponse};

/// The right that making and revoking connections needs (identity's rule; the form and the
/// buttons show only with it).
const MANAGE: &str = identity::connection::MANAGE_CONNECTIONS;

pub(crate) async fn connections(web: &Web, s: &Session, created: Option<&str>) -> WebResponse {
    let list = web.connections.list(&s.tenant).await.unwrap_or_default();
    let may_manage = rights(web, s).await.contains(MANAGE);
    let zone = crate::approvals::workspace_zone(web, s).await;
    let now = chrono::Utc::now();
    let when = |text: &str| {
        chrono::DateTime::parse_from_rfc3339(text).map_or_else(
            |_| text.to_owned(),
            |t| booking::time::in_words(t.to_utc(), &zone, now),
        )
    };
    let mut rows = String::new();
    for c in &list {
        let action = match (c.revoked, may_manage) {
            (true, _) => "revoked".to_owned(),
            (false, true) => format!(
                "<form method=\"post\" action=\"/app/connections/revoke\">{}<input type=\"hidden\" name=\"connection\" value=\"{}\"><button>Revoke</button></form>",
                csrf_field(s),
                escape(&c.id)
            ),
            (false, false) => "active".to_owned(),
        };
        let details = format!(
            "<details><summary>{} · {}</summary><dl><dt>Rights</dt><dd>{}</dd><dt>Approval</dt><dd>{}</dd><dt>Created</dt><dd>{}</dd><dt>Id</dt><dd><code>{}</code></dd></dl></details>",
            match c.rights.len() {
                1 => "1 right".to_owned(),
                n => format!("{n} rights"),
            },
            escape(c.toolset.as_str()),
            escape(&c.rights.iter().cloned().collect::<Vec<_>>().join(", ")),
            if c.approval_pinned {
                "always in the product"
            } else {
                "the workspace's modes"
            },
            escape(&when(&c.created_at)),
            escape(&c.id),
        );
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{details}</td><td>{action}</td></tr>",
            escape(&c.client_name),
            escape(&c.creator),
            escape(
                &c.last_used
                    .as_deref()
                    .map_or_else(|| "never".to_owned(), when)
            ),
        ));
    }
    let mut body = String::new();
    if let Some(token) = created {
        body.push_str(&new_token_box(token, web.mcp_url.as_deref()));
    }
    body.push_str(&format!(
        "<p class=\"muted\">Times in {}.</p><div class=\"scroll\"><table><tr><th>Client</th><th>Made by</th><th>Last used (to the hour)</th><th>Details</th><th></th></tr>{rows}</table></div>",
        escape(&zone)
    ));
    if may_manage {
        body.push_str(&format!(
            "<h2>New connection</h2><form method=\"post\" action=\"/app/connections\">{}<p><label>Client <input name=\"client\" required></label></p>\
             <p><label>Toolset <select name=\"toolset\"><option>core</option><option selected>standard</option><option>full</option></select></label></p>\
             <p><label>Approval <select name=\"approval\"><option value=\"client\" selected>the workspace's modes</option>\
             <option value=\"product\">always in the product (for clients that never ask you)</option></select></label></p>\
             <p><button>Create</button></p></form>",
            csrf_field(s)
        ));
    } else {
        body.push_str(&format!(
            "<p class=\"muted\">Making and revoking connections needs the right {MANAGE}.</p>"
        ));
    }
    html(StatusCode::OK, "MCP connections", &body)
}

/// The new token, once, with ready configurations for the common clients, each with a copy
/// button.
fn new_token_box(token: &str, mcp_url: Option<&str>) -> String {
    let url = mcp_url.unwrap_or("https://<your MCP endpoint>/mcp");
    let configs = [
        (
            "Claude Code (HTTP)",
            format!(
                "claude mcp add --transport http gatehouse {url} --header \"Authorization: Bearer {token}\""
            ),
        ),
        (
            "Claude Code (stdio, this machine)",
            format!("claude mcp add gatehouse --env GATEHOUSE_TOKEN={token} -- gatehouse stdio"),
        ),
        (
            "Claude Desktop and Cursor (stdio)",
            format!(
                "{{\"mcpServers\": {{\"gatehouse\": {{\"command\": \"gatehouse\", \"args\": [\"stdio\"], \"env\": {{\"GATEHOUSE_TOKEN\": \"{token}\"}}}}}}}}"
            ),
        ),
        (
            "Cursor (HTTP, .cursor/mcp.json)",
            format!(
                "{{\"mcpServers\": {{\"gatehouse\": {{\"url\": \"{url}\", \"headers\": {{\"Authorization\": \"Bearer {token}\"}}}}}}}}"
            ),
        ),
        (
            "VS Code (.vscode/mcp.json)",
            format!(
                "{{\"servers\": {{\"gatehouse\": {{\"type\": \"http\", \"url\": \"{url}\", \"headers\": {{\"Authorization\": \"Bearer {token}\"}}}}}}}}"
            ),
        ),
    ];
    let mut out = format!(
        "<div class=\"box\"><p>New connection. Copy the token now; it is not shown again:</p><pre id=\"token\">{}</pre><button type=\"button\" data-copy=\"token\">Copy the token</button>",
        escape(token)
    );
    for (i, (client, text)) in configs.iter().enumerate() {
        out.push_str(&format!(
            "<p class=\"muted\">{}</p><pre id=\"config-{i}\">{}</pre><button type=\"button\" data-copy=\"config-{i}\">Copy</button>",
            escape(client),
            escape(text)
        ));
    }
    out.push_str(
        "<script>document.querySelectorAll('[data-copy]').forEach(b=>b.addEventListener('click',()=>{\
         navigator.clipboard.writeText(document.getElementById(b.dataset.copy).textContent).then(()=>{b.textContent='Copied';});}));</script></div>",
    );
    out
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
