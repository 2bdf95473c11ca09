//! A member's sign-in: throttled per account and per client address, so that guessing a
//! password costs time; the wait holds for the right password too.

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
    let (tenant, member, password) = (
        form.get("tenant").cloned().unwrap_or_default(),
        form.get("member").cloned().unwrap_or_default(),
        form.get("password").cloned().unwrap_or_default(),
    );
    let attempt = accounts::Attempt::member(&tenant, &member, client_address(parts).as_deref());
    if let Err(accounts::AccountsError::Throttled {
        retry_after_seconds,
    }) = web.throttle.check(&attempt).await
    {
        return throttled("Sign in", retry_after_seconds);
    }
    let found = web
        .members
        .check_password(&tenant, &member, &password)
        .await
        .ok()
        .flatten();
    let Some(found) = found else {
        if let Err(e) = web.throttle.failed(&attempt).await {
            tracing::warn!(error = %e, "could not count a failed sign-in");
        }
        return html(
            StatusCode::UNAUTHORIZED,
            "Sign in",
            form_html(Some("Those details do not match an active member.")),
        );
    };
    let _ = web.throttle.succeeded(&attempt).await;
    let Ok((id, _)) = accounts::sessions::start_member(web.store.as_ref(), &tenant, &found).await
    else {
        return message(
            StatusCode::SERVICE_UNAVAILABLE,
            "Sign in",
            "Sign-in is unavailable; try again.",
        );
    };
    let cookie = session_cookie(web, &id);
    let mut r = redirect(&next);
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}
