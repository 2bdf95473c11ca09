//! The operator's pages: their own sign-in (`/app/operator/login`, email and password; an
//! operator is not a member of any tenant) and `/app/operator`, the global kill switch with a
//! CSRF-protected form and a required reason. Setting it goes through
//! `SwitchService::set_global`, the function `gatehouse kill-switch` calls, which writes the
//! switch and its audit row in one transaction; the authenticator reads the switch on every
//! MCP request, so it holds from the next call.

use std::collections::BTreeMap;

use accounts::Session;
use http::request::Parts;
use http::{HeaderValue, StatusCode, header};

use crate::form::parse;
use crate::html::{csrf_field, html, message, redirect};
use crate::session::{client_address, logout, session_cookie, throttled};
use crate::{Web, WebResponse};

/// The operator's sign-in page.
pub(crate) const LOGIN: &str = "/app/operator/login";
/// The operator's page.
pub(crate) const PAGE: &str = "/app/operator";

pub(crate) async fn login(web: &Web, parts: &Parts, method: &str, body: &[u8]) -> WebResponse {
    let form_html = |refused: Option<&str>| {
        maud::html! {
            @if let Some(refused) = refused { p { strong { (refused) } } }
            form method="post" action=(LOGIN) {
                p { label { "Email " input name="email" type="email" required; } }
                p { label { "Password " input name="password" type="password" required; } }
                p { button type="submit" { "Sign in" } }
            }
            p.muted { "Members sign in " a href="/app/login" { "here" } "." }
        }
    };
    if method != "POST" {
        return html(StatusCode::OK, "Operator sign-in", form_html(None));
    }
    let form = parse(body);
    let field = |name: &str| form.get(name).map_or("", String::as_str);
    let address = client_address(parts);
    let signed_in = accounts::operators::sign_in(
        web.store.as_ref(),
        &web.outside(),
        &web.throttle,
        field("email"),
        field("password"),
        address.as_deref(),
    )
    .await;
    let id = match signed_in {
        Ok(Some((id, _))) => id,
        Ok(None) => {
            return html(
                StatusCode::UNAUTHORIZED,
                "Operator sign-in",
                form_html(Some("Those details do not match an active operator.")),
            );
        }
        Err(accounts::AccountsError::Throttled {
            retry_after_seconds,
        }) => return throttled("Operator sign-in", retry_after_seconds),
        Err(e) => {
            tracing::warn!(error = %e, "an operator's sign-in failed");
            return message(
                StatusCode::SERVICE_UNAVAILABLE,
                "Operator sign-in",
                "Sign-in is unavailable; try again.",
            );
        }
    };
    let mut r = redirect(PAGE);
    if let Ok(v) = HeaderValue::from_str(&session_cookie(web, &id)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// Every request of an operator's session (the CSRF token of a POST is checked already).
pub(crate) async fn handle(
    web: &Web,
    id: &str,
    s: &Session,
    method: &str,
    path: &str,
    form: &BTreeMap<String, String>,
) -> WebResponse {
    match (method, path) {
        ("GET", "/app" | "/app/") => redirect(PAGE),
        ("GET", PAGE) => page(web, s, None).await,
        ("POST", PAGE) => set(web, s, form).await,
        ("POST", "/app/logout") => logout(web, id, LOGIN).await,
        _ if path.starts_with("/app/operator/") => message(
            StatusCode::NOT_FOUND,
            "Not found",
            "There is no such operator page: the operator's page is /app/operator.",
        ),
        _ => message(
            StatusCode::FORBIDDEN,
            "Not for operators",
            "An operator's session opens no workspace's pages: operators run the deployment and \
             belong to no tenant. Sign in as a member of the workspace instead.",
        ),
    }
}

async fn page(web: &Web, s: &Session, notice: Option<(StatusCode, &str)>) -> WebResponse {
    let item = web
        .store
        .get(&identity::keys::global_switch())
        .await
        .ok()
        .flatten();
    let on = identity::switch::global_is_on(item.as_ref());
    let field = |k: &str| {
        item.as_ref()
            .and_then(|i| i.get(k))
            .and_then(store::Value::as_s)
            .unwrap_or_default()
            .to_owned()
    };
    let status = notice.map_or(StatusCode::OK, |(status, _)| status);
    let body = maud::html! {
        @if let Some((_, text)) = notice { div.box { (text) } }
        p { "Signed in as operator " strong { (s.member) } "." }
        p {
            "The global kill switch is " strong { (if on { "ON" } else { "off" }) }
            (if on {
                ": every agent call in every workspace is refused with 503"
            } else {
                ": agents work, within each workspace's own agent access"
            })
            "."
        }
        @if item.is_some() {
            p.muted { "Last set by " (field("actor")) " at " (field("at")) ": " (field("reason")) }
        }
        form method="post" action=(PAGE) {
            (csrf_field(s))
            input type="hidden" name="state" value=(if on { "off" } else { "on" });
            p { label { "Reason (required, audited) " input name="reason" required; } }
            p { button { (if on { "Turn the kill switch off" } else { "Turn the kill switch on" }) } }
        }
        form method="post" action="/app/logout" { (csrf_field(s)) button { "Sign out" } }
    };
    html(status, "Global kill switch", body)
}

async fn set(web: &Web, s: &Session, form: &BTreeMap<String, String>) -> WebResponse {
    let on = match form.get("state").map(String::as_str) {
        Some("on") => true,
        Some("off") => false,
        _ => {
            return page(web, s, Some((StatusCode::BAD_REQUEST, "Choose on or off."))).await;
        }
    };
    let reason = form.get("reason").map(String::as_str).unwrap_or_default();
    let flipped = accounts::operators::set_kill_switch(
        web.store.as_ref(),
        &web.switches,
        s.member.as_str(),
        identity::Channel::Web,
        on,
        reason,
    )
    .await;
    match flipped {
        Ok(()) => {
            let done = if on {
                "The kill switch is ON: agents' next calls are refused."
            } else {
                "The kill switch is off: agents' next calls are served."
            };
            page(web, s, Some((StatusCode::OK, done))).await
        }
        Err(accounts::AccountsError::Invalid(m)) => {
            page(web, s, Some((StatusCode::BAD_REQUEST, &m))).await
        }
        Err(accounts::AccountsError::Forbidden(m)) => {
            page(web, s, Some((StatusCode::FORBIDDEN, &m))).await
        }
        Err(e) => {
            page(
                web,
                s,
                Some((StatusCode::SERVICE_UNAVAILABLE, &e.to_string())),
            )
            .await
        }
    }
}
