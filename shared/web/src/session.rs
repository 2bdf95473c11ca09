//! Sessions as the pages see them: the cookie, the live session (a member's only while the
//! member is active and the same person who signed in), CSRF checks, the member's live rights,
//! signing out, and the client's address for the sign-in throttle.

use std::collections::BTreeSet;

use accounts::Session;
use http::request::Parts;
use http::{HeaderValue, StatusCode, header};
use identity::Directory as _;

use crate::html::{html, message, redirect};
use crate::{Web, WebResponse};

pub(crate) const COOKIE: &str = identity::token::SESSION_COOKIE;

pub(crate) fn cookie_value(parts: &Parts) -> Option<String> {
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

/// The live session of the request's cookie: while its account holds it (a member active,
/// the same person who signed in, with the same password; an operator existing, active, with
/// the same password: `accounts::sessions::live`).
pub(crate) async fn session(web: &Web, parts: &Parts) -> Option<(String, Session)> {
    let id = cookie_value(parts)?;
    let s = accounts::sessions::live(web.store.as_ref(), &id)
        .await
        .ok()??;
    Some((id, s))
}

/// The client's address, when the transport told it (for the sign-in throttle).
pub(crate) fn client_address(parts: &Parts) -> Option<String> {
    parts
        .extensions
        .get::<crate::ClientAddress>()
        .map(|a| a.0.clone())
}

/// The answer to a throttled sign-in: 429 with how long to wait.
pub(crate) fn throttled(title: &str, retry_after_seconds: u64) -> WebResponse {
    let mut r = html(
        StatusCode::TOO_MANY_REQUESTS,
        title,
        maud::html! {
            p { strong { "Too many failed sign-ins." } " Wait " (retry_after_seconds) " seconds, then try again." }
        },
    );
    if let Ok(v) = HeaderValue::from_str(&retry_after_seconds.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// Whether the form carries the session's CSRF token, compared in constant time (as digests,
/// so that neither the comparison's time nor the lengths say how much of a guess was right).
pub(crate) fn csrf_ok(s: &Session, form: &std::collections::BTreeMap<String, String>) -> bool {
    use sha2::Digest as _;
    let Some(given) = form.get("csrf").filter(|t| !t.is_empty()) else {
        return false;
    };
    let (a, b) = (
        sha2::Sha256::digest(given.as_bytes()),
        sha2::Sha256::digest(s.csrf.as_bytes()),
    );
    a.iter().zip(b.iter()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0 && !s.csrf.is_empty()
}

pub(crate) fn forbidden_csrf() -> WebResponse {
    message(
        StatusCode::FORBIDDEN,
        "Form expired",
        "This form's security token is missing or wrong. Open the page again and retry.",
    )
}

pub(crate) async fn rights(web: &Web, s: &Session) -> BTreeSet<String> {
    match web.directory.member(&s.tenant, &s.member).await {
        Ok(Some(m)) if m.active => m.rights,
        _ => BTreeSet::new(),
    }
}

/// Ends the session and clears the cookie.
pub(crate) async fn logout(web: &Web, id: &str, to: &str) -> WebResponse {
    let _ = accounts::sessions::end(web.store.as_ref(), id).await;
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
        accounts::sessions::SESSION_SECONDS
    )
}

pub(crate) fn actor(s: &Session) -> identity::Actor {
    identity::Actor {
        tenant: s.tenant.clone(),
        member: s.member.clone(),
        channel: identity::Channel::Web,
    }
}
