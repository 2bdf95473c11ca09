//! A member's sign-in: throttled per account and per client address, so that guessing a
//! password costs time; the wait holds for the right password too.

use http::request::Parts;
use http::{HeaderValue, StatusCode, header};

use crate::form::{escape, parse};
use crate::html::{html, redirect};
use crate::session::{client_address, session_cookie, throttled};
use crate::{Web, WebResponse};

pub(crate) async fn login(web: &Web, parts: &Parts, method: &str, body: &[u8]) -> WebResponse {
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
            &form_html("<p><strong>Those details do not match an active member.</strong></p>"),
        );
    };
    let _ = web.throttle.succeeded(&attempt).await;
    let Ok((id, _)) = accounts::sessions::start_member(web.store.as_ref(), &tenant, &found).await
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
