//! A member's sign-in: each attempt counted before its password is checked (per account and
//! address, per account, per address: `accounts::Throttle`), so that guessing a password
//! costs time; the wait holds for the right password too.

use http::request::Parts;
use http::{HeaderValue, StatusCode, header};

use crate::form::{parse, query_value};
use crate::html::{html, message, redirect};
use crate::session::{client_address, session_cookie, throttled};
use crate::{Web, WebResponse};

pub(crate) async fn login(web: &Web, parts: &Parts, method: &str, body: &[u8]) -> WebResponse {
    // Where to go after signing in: only a page of this product (no other host).
    let next = parse(parts.uri.query().unwrap_or_default().as_bytes())
        .remove("next")
        .filter(|n| n.starts_with("/app/") && !n.starts_with("//"))
        .unwrap_or_else(|| "/app/".to_owned());
    let form_html = |refused: Option<&str>| {
        maud::html! {
            @if let Some(refused) = refused { p { strong { (refused) } } }
            form method="post" action={ "/app/login?next=" (query_value(&next)) } {
                p { label { "Workspace " input name="tenant" required; } }
                p { label { "Member " input name="member" required; } }
                p { label { "Password " input name="password" type="password" required; } }
                p { button type="submit" { "Sign in" } }
            }
            p.muted { "Operators sign in " a href="/app/operator/login" { "here" } "." }
        }
    };
    if method != "POST" {
        return html(StatusCode::OK, "Sign in", form_html(None));
    }
    let form = parse(body);
    let field = |name: &str| form.get(name).map_or("", String::as_str);
    let address = client_address(parts);
    let signed_in = web
        .members
        .sign_in(
            &web.throttle,
            &store::TenantId::new(field("tenant")),
            &store::MemberId::new(field("member")),
            field("password"),
            address.as_deref(),
        )
        .await;
    let id = match signed_in {
        Ok(Some((id, _))) => id,
        Ok(None) => {
            return html(
                StatusCode::UNAUTHORIZED,
                "Sign in",
                form_html(Some("Those details do not match an active member.")),
            );
        }
        Err(accounts::AccountsError::Throttled {
            retry_after_seconds,
        }) => return throttled("Sign in", retry_after_seconds),
        Err(e) => {
            tracing::warn!(error = %e, "a sign-in failed");
            return message(
                StatusCode::SERVICE_UNAVAILABLE,
                "Sign in",
                "Sign-in is unavailable; try again.",
            );
        }
    };
    let cookie = session_cookie(web, &id);
    let mut r = redirect(&next);
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}
