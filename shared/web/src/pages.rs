//! The pages people use: sign-in, approvals, connections, agent access, recent agent activity.
//! Plain HTML; every form carries the session's CSRF token; the session cookie is HttpOnly and
//! SameSite=Strict, and Secure outside plain local HTTP.

use std::collections::BTreeSet;

use http::request::Parts;
use http::{HeaderValue, StatusCode, header};
use identity::Directory as _;
use identity::product::Session;

use crate::form::{escape, parse};
use crate::{Web, WebResponse, respond};

const COOKIE: &str = identity::token::SESSION_COOKIE;
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222}\
    .box{border:1px solid #ccc;border-radius:6px;padding:1rem;margin:1rem 0}.muted{color:#666}\
    button{padding:.4rem 1rem;margin-right:.5rem}pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem}\
    table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem;text-align:left}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t} · gatehouse</title><style>{STYLE}</style></head>\
         <body><p class=\"muted\"><a href=\"/app/\">gatehouse</a></p><h1>{t}</h1>{body}</body></html>",
        t = escape(title)
    )
}

pub(crate) fn html(status: StatusCode, title: &str, body: &str) -> WebResponse {
    respond(status, "text/html; charset=utf-8", page(title, body))
}

pub(crate) fn redirect(to: &str) -> WebResponse {
    let mut r = respond(StatusCode::SEE_OTHER, "text/plain", "");
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

fn cookie_value(parts: &Parts) -> Option<String> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            c.trim()
                .strip_prefix(&format!("{COOKIE}="))
                .map(str::to_owned)
        })
}

async fn session(web: &Web, parts: &Parts) -> Option<(String, Session)> {
    let id = cookie_value(parts)?;
    let s = identity::product::session(web.store.as_ref(), &id)
        .await
        .ok()??;
    Some((id, s))
}

pub(crate) fn csrf_field(s: &Session) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        escape(&s.csrf)
    )
}

fn csrf_ok(s: &Session, form: &std::collections::BTreeMap<String, String>) -> bool {
    form.get("csrf")
        .is_some_and(|t| !t.is_empty() && *t == s.csrf)
}

fn forbidden_csrf() -> WebResponse {
    html(
        StatusCode::FORBIDDEN,
        "Form expired",
        "<p>This form's security token is missing or wrong. Open the page again and retry.</p>",
    )
}

pub(crate) async fn rights(web: &Web, s: &Session) -> BTreeSet<String> {
    match web.directory.member(&s.tenant, &s.member).await {
        Ok(Some(m)) if m.active => m.rights,
        _ => BTreeSet::new(),
    }
}

pub(crate) async fn handle(web: &Web, parts: &Parts, path: &str, body: &[u8]) -> WebResponse {
    let method = parts.method.as_str();
    if path == "/app/login" {
        return login(web, parts, method, body).await;
    }
    if path == crate::operator::LOGIN {
        return crate::operator::login(web, method, body).await;
    }
    let operator_path = path == crate::operator::PAGE || path.starts_with("/app/operator/");
    let Some((id, s)) = session(web, parts).await else {
        if method == "GET" && operator_path {
            return redirect(crate::operator::LOGIN);
        }
        if method == "GET" {
            return redirect(&format!("/app/login?next={}", escape(path)));
        }
        return html(
            StatusCode::UNAUTHORIZED,
            "Sign in",
            "<p>Sign in first: <a href=\"/app/login\">sign in</a>.</p>",
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
            "<p>This page is for operators, who run the whole deployment. A member's session, even an owner's, \
             cannot open it or change the global kill switch. To stop agents in your workspace, use \
             <a href=\"/app/agent-access\">Agent access</a>.</p>",
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
        _ => match path.strip_prefix("/app/approvals/") {
            Some(token) if method == "GET" => approval(web, &s, token, None).await,
            Some(token) if method == "POST" => decide(web, &s, token, &form).await,
            _ if method == "GET" => crate::records::page(web, &s, path).await,
            _ => html(
                StatusCode::NOT_FOUND,
                "Not found",
                "<p>There is no such page.</p>",
            ),
        },
    }
}

/// Ends the session and clears the cookie.
pub(crate) async fn logout(web: &Web, id: &str, to: &str) -> WebResponse {
    let _ = identity::product::end_session(web.store.as_ref(), id).await;
    let mut r = redirect(to);
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("gh_session=; Path=/app; Max-Age=0; HttpOnly; SameSite=Strict"),
    );
    r
}

/// The session cookie for a new session.
pub(crate) fn session_cookie(web: &Web, id: &str) -> String {
    let secure = if web.secure_cookies { "; Secure" } else { "" };
    format!(
        "{COOKIE}={id}; Path=/app; Max-Age={}; HttpOnly; SameSite=Strict{secure}",
        identity::product::SESSION_SECONDS
    )
}

async fn login(web: &Web, parts: &Parts, method: &str, body: &[u8]) -> WebResponse {
    let next = parts
        .uri
        .query()
        .and_then(|q| q.split('&').find_map(|p| p.strip_prefix("next=")))
        .filter(|n| n.starts_with("/app/") && !n.starts_with("//"))
        .unwrap_or("/app/")
        .to_owned();
    let form_html = |message: &str| {
        format!(
            "{message}<form method=\"post\" action=\"/app/login?next={n}\"><p><label>Workspace <input name=\"tenant\" required></label></p>\
             <p><label>Member <input name=\"member\" required></label></p><p><label>Password <input name=\"password\" type=\"password\" required></label></p>\
             <p><button type=\"submit\">Sign in</button></p></form><p class=\"muted\">Operators sign in <a href=\"/app/operator/login\">here</a>.</p>",
            n = escape(&next)
        )
    };
    if method != "POST" {
        return html(StatusCode::OK, "Sign in", &form_html(""));
    }
    let form = parse(body);
    let (tenant, member, password) = (
        form.get("tenant").cloned().unwrap_or_default(),
        form.get("member").cloned().unwrap_or_default(),
        form.get("password").cloned().unwrap_or_default(),
    );
    let ok = identity::product::check_password(web.store.as_ref(), &tenant, &member, &password)
        .await
        .unwrap_or(false);
    if !ok {
        return html(
            StatusCode::UNAUTHORIZED,
            "Sign in",
            &form_html("<p><strong>Those details do not match an active member.</strong></p>"),
        );
    }
    let Ok((id, _)) = identity::product::start_session(web.store.as_ref(), &tenant, &member).await
    else {
        return html(
            StatusCode::SERVICE_UNAVAILABLE,
            "Sign in",
            "<p>Sign-in is unavailable; try again.</p>",
        );
    };
    let cookie = session_cookie(web, &id);
    let mut r = redirect(&next);
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

fn index(s: &Session) -> WebResponse {
    let body = format!(
        "<p>Signed in as <strong>{}</strong> in <strong>{}</strong>.</p><ul><li><a href=\"/app/connections\">MCP connections</a></li>\
         <li><a href=\"/app/agent-access\">Agent access</a></li><li><a href=\"/app/activity\">Recent agent activity</a></li></ul>\
         <form method=\"post\" action=\"/app/logout\">{}<button>Sign out</button></form>",
        escape(&s.member),
        escape(&s.tenant),
        csrf_field(s)
    );
    html(StatusCode::OK, "gatehouse", &body)
}

async fn approval(
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
    if p.status == "pending" {
        body.push_str(&format!(
            "<form method=\"post\">{c}<button name=\"decision\" value=\"approve\">Approve</button><button name=\"decision\" value=\"reject\">Reject</button></form>",
            c = csrf_field(s)
        ));
    }
    html(StatusCode::OK, "Approve an agent's action", &body)
}

async fn decide(
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

async fn connections(web: &Web, s: &Session, created: Option<&str>) -> WebResponse {
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

fn actor(s: &Session) -> identity::Actor {
    identity::Actor {
        tenant: s.tenant.clone(),
        member: s.member.clone(),
        channel: identity::Channel::Web,
    }
}

async fn create_connection(
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

async fn revoke_connection(
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

async fn agent_access_page(web: &Web, s: &Session, message: Option<&str>) -> WebResponse {
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

async fn set_approval_mode(
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

async fn set_agent_access(
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

async fn activity(web: &Web, s: &Session) -> WebResponse {
    let entries = identity::audit::recent(web.store.as_ref(), &s.tenant, None, 50)
        .await
        .unwrap_or_default();
    let mut rows = String::new();
    for e in entries.iter().filter(|e| e.channel.name() == "mcp") {
        let (connection, client) = match &e.channel {
            identity::Channel::Mcp { connection, client } => (connection.as_str(), client.as_str()),
            _ => ("", ""),
        };
        let approved = e
            .approval
            .as_deref()
            .map(identity::audit::approval_words)
            .unwrap_or_default();
        rows.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&e.at),
            escape(&e.action),
            escape(&e.ids.join(", ")),
            escape(&approved),
            escape(client),
            escape(connection)
        ));
    }
    html(
        StatusCode::OK,
        "Recent agent activity",
        &format!(
            "<table><tr><th>When</th><th>What</th><th>Objects</th><th>Approved by</th><th>Client</th><th>Connection</th></tr>{rows}</table>"
        ),
    )
}
