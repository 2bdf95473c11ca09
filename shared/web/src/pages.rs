//! The pages people use, routed here: sign-in (`sign_in`), approvals, connections, agent
//! access, recent agent activity, records. Plain HTML; every form carries the session's CSRF
//! token; the session cookie is HttpOnly and SameSite=Strict, and Secure outside plain local
//! HTTP.

use accounts::Session;
use http::StatusCode;
use http::request::Parts;

use crate::agent_access::{agent_access_page, set_agent_access, set_approval_mode};
use crate::approvals::{approval, decide};
use crate::connections::{connections, create_connection, revoke_connection};
use crate::form::{parse, query_value};
use crate::html::{csrf_field, html, message, redirect};
use crate::session::{csrf_ok, forbidden_csrf, logout, session};
use crate::{Web, WebResponse};

pub(crate) async fn handle(web: &Web, parts: &Parts, path: &str, body: &[u8]) -> WebResponse {
    let method = parts.method.as_str();
    if path == crate::connections::COPY_SCRIPT_PATH && method == "GET" {
        let script = crate::connections::COPY_SCRIPT;
        return crate::respond(StatusCode::OK, "text/javascript; charset=utf-8", script);
    }
    if path == "/app/login" {
        return crate::sign_in::login(web, parts, method, body).await;
    }
    if path == crate::operator::LOGIN {
        return crate::operator::login(web, parts, method, body).await;
    }
    let operator_path = path == crate::operator::PAGE || path.starts_with("/app/operator/");
    let Some((id, s)) = session(web, parts).await else {
        if method == "GET" && operator_path {
            return redirect(crate::operator::LOGIN);
        }
        if method == "GET" {
            return redirect(&format!("/app/login?next={}", query_value(path)));
        }
        return html(
            StatusCode::UNAUTHORIZED,
            "Sign in",
            maud::html! { p { "Sign in first: " a href="/app/login" { "sign in" } "." } },
        );
    };
    let form = parse(body);
    if method == "POST" && !csrf_ok(&s, &form) {
        return forbidden_csrf();
    }
    // An operator's session opens the operator's pages only, and no tenant's; a member's
    // session (even an owner's) never opens the operator's pages.
    if s.operator {
        return crate::operator::handle(web, &id, &s, method, path, &form).await;
    }
    if operator_path {
        return html(
            StatusCode::FORBIDDEN,
            "Operators only",
            maud::html! { p {
                "This page is for operators, who run the whole deployment. A member's session, even an \
                 owner's, cannot open it or change the global kill switch. To stop agents in your \
                 workspace, use " a href="/app/agent-access" { "Agent access" } "."
            } },
        );
    }
    match (method, path) {
        ("GET", "/app" | "/app/") => index(&s),
        ("POST", "/app/logout") => logout(web, &id, "/app/login").await,
        ("GET", "/app/connections") => connections(web, &s, None).await,
        ("POST", "/app/connections") => create_connection(web, &s, &form).await,
        ("POST", "/app/connections/revoke") => revoke_connection(web, &s, &form).await,
        ("GET", "/app/agent-access") => agent_access_page(web, &s, None).await,
        ("POST", "/app/agent-access") => set_agent_access(web, &s, &form).await,
        ("POST", "/app/agent-access/approval") => set_approval_mode(web, &s, &form).await,
        ("GET", "/app/activity") => activity(web, &s).await,
        ("GET", "/app/approvals") => crate::approvals::inbox(web, &s).await,
        _ => match path.strip_prefix("/app/approvals/") {
            Some(token) if method == "GET" => approval(web, &s, token, None).await,
            Some(token) if method == "POST" => decide(web, &s, token, &form).await,
            _ => match methods_of(path) {
                Some(allowed) => not_allowed(allowed),
                None if method == "GET" => match &web.records {
                    Some(records) => crate::records::page(web, records.as_ref(), &s, path)
                        .await
                        .unwrap_or_else(no_page),
                    None => no_page(),
                },
                None => no_page(),
            },
        },
    }
}

fn no_page() -> WebResponse {
    message(StatusCode::NOT_FOUND, "Not found", "There is no such page.")
}

/// The methods a page path takes, for a request that used another one.
fn methods_of(path: &str) -> Option<&'static str> {
    match path {
        "/app" | "/app/" | "/app/activity" | "/app/approvals" => Some("GET"),
        "/app/connections" | "/app/agent-access" => Some("GET, POST"),
        "/app/logout" | "/app/connections/revoke" | "/app/agent-access/approval" => Some("POST"),
        _ => None,
    }
}

/// 405 with the methods the page takes (a sign-out is a form's POST, so that no link can
/// sign anyone out).
fn not_allowed(allowed: &'static str) -> WebResponse {
    let text = if allowed == "POST" {
        "This is a form's address: use the button on the page it belongs to."
    } else {
        "This page does not take that method."
    };
    let mut r = message(StatusCode::METHOD_NOT_ALLOWED, "Not allowed", text);
    r.headers_mut()
        .insert(http::header::ALLOW, http::HeaderValue::from_static(allowed));
    r
}

fn index(s: &Session) -> WebResponse {
    let body = maud::html! {
        p { "Signed in as " strong { (s.member) } " in " strong { (s.tenant) } "." }
        ul {
            li { a href="/app/approvals" { "Approvals waiting" } }
            li { a href="/app/connections" { "MCP connections" } }
            li { a href="/app/agent-access" { "Agent access" } }
            li { a href="/app/activity" { "Recent agent activity" } }
        }
        form method="post" action="/app/logout" { (csrf_field(s)) button { "Sign out" } }
    };
    html(StatusCode::OK, "gatehouse", body)
}

/// `GET /app/activity`: the workspace's agent audit trail, for members who may read it (the
/// right `list_recent_changes` asks for); a store failure says so rather than showing an empty
/// trail.
async fn activity(web: &Web, s: &Session) -> WebResponse {
    const TITLE: &str = "Recent agent activity";
    if !crate::session::rights(web, s)
        .await
        .contains(identity::audit::AUDIT_READ)
    {
        let why = "Reading the workspace's agent activity needs the audit:read right. Ask an owner of the workspace for it.";
        return message(StatusCode::FORBIDDEN, TITLE, why);
    }
    let entries = match identity::audit::recent(web.store.as_ref(), &s.tenant, None, 50).await {
        Ok(entries) => entries,
        Err(e) => return message(StatusCode::SERVICE_UNAVAILABLE, TITLE, &e.to_string()),
    };
    let zone = crate::approvals::workspace_zone(web, s).await;
    let now = web.now();
    let body = maud::html! {
        p.muted { "Times in " (zone) "." }
        div.scroll { table {
            tr { th { "When" } th { "What" } th { "Objects" } th { "Approved by" } th { "Client" } th { "Connection" } }
            @for e in entries.iter().filter(|e| e.channel.name() == "mcp") {
                @let (connection, client) = match &e.channel {
                    identity::Channel::Mcp { connection, client } => (connection.as_str(), client.as_str()),
                    _ => ("", ""),
                };
                tr {
                    td { (crate::html::when(&e.at, &zone, now)) }
                    td { (e.action) }
                    td { (e.ids.join(", ")) }
                    td { (e.approval.as_deref().map(identity::audit::approval_words).unwrap_or_default()) }
                    td { (client) }
                    td { (connection) }
                }
            }
        } }
    };
    html(StatusCode::OK, TITLE, body)
}
