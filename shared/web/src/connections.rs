//! MCP connections: created (the token is shown once), listed, revoked.

use accounts::Session;
use http::StatusCode;

use maud::Markup;

use crate::form::choice;
use crate::html::{csrf_field, html, message, redirect, refused};
use crate::session::{actor, rights};
use crate::{Web, WebResponse};

/// The right that making and revoking connections needs (identity's rule; the form and the
/// buttons show only with it).
const MANAGE: &str = identity::connection::MANAGE_CONNECTIONS;

pub(crate) async fn connections(web: &Web, s: &Session, created: Option<&str>) -> WebResponse {
    let list = web.connections.list(&s.tenant).await.unwrap_or_default();
    let may_manage = rights(web, s).await.contains(MANAGE);
    let zone = crate::approvals::workspace_zone(web, s).await;
    let now = web.now();
    let when = |text: &str| crate::html::when(text, &zone, now);
    let body = maud::html! {
        @if let Some(token) = created { (new_token_box(token, web.mcp_url.as_deref(), web.stdio_args.as_deref())) }
        p.muted {
            @if let Some(url) = &web.mcp_url { "Clients connect to " code { (url) } ". " }
            "Times in " (zone) "."
        }
        div.scroll { table.stack {
            tr { th { "Client" } th { "Made by" } th { "Last used (noted at most hourly)" } th { "Details" } th {} }
            @for c in &list {
                tr {
                    td { (c.client_name) }
                    td { (c.creator) }
                    td { (c.last_used.as_deref().map_or_else(|| "never".to_owned(), when)) }
                    td { details {
                        summary {
                            @if c.rights.len() == 1 { "1 right" } @else { (c.rights.len()) " rights" }
                            " · " (c.toolset.as_str())
                        }
                        dl {
                            dt { "Rights" } dd { (c.rights.iter().cloned().collect::<Vec<_>>().join(", ")) }
                            dt { "Approval" } dd { (if c.approval_pinned { "always in the product" } else { "the workspace's modes" }) }
                            dt { "Created" } dd { (when(&c.created_at)) }
                            dt { "Id" } dd { code { (c.id) } }
                        }
                    } }
                    td {
                        @if c.revoked { "revoked" }
                        @else if may_manage {
                            form method="post" action="/app/connections/revoke" {
                                (csrf_field(s))
                                input type="hidden" name="connection" value=(c.id);
                                button { "Revoke" }
                            }
                        } @else { "active" }
                    }
                }
            }
        } }
        @if may_manage {
            h2 { "New connection" }
            form method="post" action="/app/connections" {
                (csrf_field(s))
                // One form makes one connection: a reload of the page that shows the token, or
                // a second press, sends this id again and makes nothing.
                input type="hidden" name="form" value=(web.random_text(24));
                p { label { "Client " input name="client" required; } }
                p { label { "Toolset " select name="toolset" {
                    option { "core" } option selected { "standard" } option { "full" }
                } } }
                p { label { "Approval " select name="approval" {
                    option value="client" selected { "the workspace's modes" }
                    option value="product" { "always in the product (for clients that never ask you)" }
                } } }
                p { button { "Create" } }
            }
        } @else {
            p.muted { "Making and revoking connections needs the right " (MANAGE) "." }
        }
    };
    html(StatusCode::OK, "MCP connections", body)
}

/// Where the page that shows a new token loads [`COPY_SCRIPT`] from: a file of this origin,
/// since the pages' content security policy (`default-src 'self'`) runs no inline script.
pub(crate) const COPY_SCRIPT_PATH: &str = "/app/copy.js";

/// Copies the text of the element a button names (`data-copy`) to the clipboard.
pub(crate) const COPY_SCRIPT: &str = "document.querySelectorAll('[data-copy]').forEach(b=>b.addEventListener('click',()=>{\
    navigator.clipboard.writeText(document.getElementById(b.dataset.copy).textContent).then(()=>{b.textContent='Copied';});}));";

/// The new token, once, with ready configurations for the common clients, each with a copy
/// button.
fn new_token_box(token: &str, mcp_url: Option<&str>, stdio_args: Option<&[String]>) -> Markup {
    let url = mcp_url.unwrap_or("https://<your MCP endpoint>/mcp");
    let mut configs = vec![(
        "Claude Code (HTTP)",
        format!(
            "claude mcp add --transport http gatehouse {url} --header \"Authorization: Bearer {token}\""
        ),
    )];
    if let Some(args) = stdio_args {
        configs.extend(stdio_configs(token, args));
    }
    configs.extend([
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
    ]);
    maud::html! {
        div.box {
            p { "New connection. Copy the token now; it is not shown again:" }
            pre id="token" { (token) }
            button type="button" data-copy="token" { "Copy the token" }
            @for (i, (client, text)) in configs.iter().enumerate() {
                p.muted { (client) }
                pre id={ "config-" (i) } { (text) }
                button type="button" data-copy={ "config-" (i) } { "Copy" }
            }
            script src=(COPY_SCRIPT_PATH) {}
        }
    }
}

/// The stdio configurations: `gatehouse stdio` on this machine, with the options that open
/// the store this server uses (`args`, such as `--data-dir PATH`).
fn stdio_configs(token: &str, args: &[String]) -> [(&'static str, String); 2] {
    let mut all: Vec<String> = args.to_vec();
    all.push("stdio".into());
    let words = all
        .iter()
        .map(|a| crate::shell_word(a))
        .collect::<Vec<_>>()
        .join(" ");
    let json_args = serde_json::to_string(&all).unwrap_or_default();
    [
        (
            "Claude Code (stdio, this machine)",
            format!("claude mcp add gatehouse --env GATEHOUSE_TOKEN={token} -- gatehouse {words}"),
        ),
        (
            "Claude Desktop and Cursor (stdio)",
            format!(
                "{{\"mcpServers\": {{\"gatehouse\": {{\"command\": \"gatehouse\", \"args\": {json_args}, \"env\": {{\"GATEHOUSE_TOKEN\": \"{token}\"}}}}}}}}"
            ),
        ),
    ]
}

pub(crate) async fn create_connection(
    web: &Web,
    s: &Session,
    form: &std::collections::BTreeMap<String, String>,
) -> WebResponse {
    let refuse = |m: &str| message(StatusCode::BAD_REQUEST, "MCP connections", m);
    let toolset = match choice(form, "toolset", mcp_pipeline::Toolset::parse) {
        Ok(toolset) => toolset.unwrap_or(mcp_pipeline::Toolset::Standard),
        Err(sent) => {
            return refuse(&format!(
                "Unknown toolset {sent:?}: core, standard or full."
            ));
        }
    };
    let approval = match choice(form, "approval", mcp_pipeline::ApprovalMode::parse) {
        Ok(approval) => approval.unwrap_or_default(),
        Err(sent) => return refuse(&format!("Unknown approval {sent:?}: client or product.")),
    };
    let new = identity::NewConnection {
        rights: rights(web, s).await,
        toolset,
        client_name: form.get("client").cloned().unwrap_or_default(),
        approval,
    };
    let Some(form_id) = form.get("form") else {
        return refuse("This form is from an older page: open the connections page again.");
    };
    match web
        .connections
        .create_token_for_form(&actor(s), new, form_id)
        .await
    {
        Ok((_, token)) => connections(web, s, Some(&token)).await,
        Err(e) => refused("MCP connections", &e),
    }
}

pub(crate) async fn revoke_connection(
    web: &Web,
    s: &Session,
    form: &std::collections::BTreeMap<String, String>,
) -> WebResponse {
    let id = form.get("connection").cloned().unwrap_or_default();
    let id = mcp_pipeline::ConnectionId::new(id);
    match web.connections.revoke(&actor(s), &id).await {
        Ok(_) => redirect("/app/connections"),
        Err(e) => refused("MCP connections", &e),
    }
}
